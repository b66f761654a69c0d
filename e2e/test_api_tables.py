"""Server-side tables through stock kubectl: ``kubectl get`` prints the columns the server's
printers define (upstream v1.33's), ``-o wide`` adds the priority-1 columns."""

from __future__ import annotations

import re

import pytest

from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(180)]

WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.27"}
      - {name: log, image: busybox}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: "postgres:16"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: agent, image: agent:1}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: cache}
spec:
  replicas: 1
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec:
      containers: [{name: redis, image: redis:7}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  completions: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  timeZone: Etc/UTC
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: backup, image: backup:1}]
"""

POD_AND_SERVICES = """
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: web}}
spec:
  containers:
  - {name: a, image: nginx}
  - {name: b, image: busybox}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, name: http}, {port: 53, protocol: UDP, name: dns}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 443, nodePort: 30443}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: db.example.com
"""

CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "1", b: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: Opaque
stringData: {user: u, password: p, token: t}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
---
apiVersion: coordination.plat.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: node-1_abc}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources: {requests: {storage: 1Gi}}
---
apiVersion: rbac.authorization.plat.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.plat.io/v1
kind: RoleBinding
metadata: {name: read-pods}
roleRef: {apiGroup: rbac.authorization.plat.io, kind: Role, name: reader}
subjects:
- {kind: User, name: jane, apiGroup: rbac.authorization.plat.io}
- {kind: Group, name: devs, apiGroup: rbac.authorization.plat.io}
- {kind: ServiceAccount, name: builder, namespace: NAMESPACE}
"""


def table(out: str) -> list[dict[str, str]]:
    """kubectl's aligned table as rows of {header: cell}: columns start where the header's
    do (headers are separated by two or more spaces; cells may be empty)."""
    lines = [line for line in out.splitlines() if line.strip()]
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[s:e].strip() for s, e in zip(starts, [*starts[1:], None], strict=True)]
    rows = []
    for line in lines[1:]:
        cells = [line[s:e].strip() if e is not None else line[s:].strip()
                 for s, e in zip(starts, [*starts[1:], None], strict=True)]
        rows.append(dict(zip(names, cells, strict=True)))
    return rows


def get(api: ApiServerProcess, ns: str, *args: str) -> dict[str, dict[str, str]]:
    out = api.kubectl("get", "-n", ns, *args).stdout
    return {r["NAME"]: r for r in table(out)}


def headers(api: ApiServerProcess, ns: str, *args: str) -> list[str]:
    return list(table(api.kubectl("get", "-n", ns, *args).stdout)[0])


def test_workload_tables(api_server: ApiServerProcess, namespace: str) -> None:
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=WORKLOADS)
    ns = namespace
    assert headers(api_server, ns, "deployments") == [
        "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    web = get(api_server, ns, "deployments", "-o", "wide")["web"]
    assert (web["READY"], web["UP-TO-DATE"], web["AVAILABLE"]) == ("0/2", "0", "0")
    assert (web["CONTAINERS"], web["IMAGES"], web["SELECTOR"]) == (
        "nginx,log", "nginx:1.27,busybox", "app=web")
    db = get(api_server, ns, "statefulsets", "-o", "wide")["db"]
    assert (db["READY"], db["CONTAINERS"], db["IMAGES"]) == ("0/3", "pg", "postgres:16")
    assert headers(api_server, ns, "daemonsets") == [
        "NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR",
        "AGE"]
    agent = get(api_server, ns, "daemonsets", "-o", "wide")["agent"]
    assert (agent["DESIRED"], agent["NODE SELECTOR"], agent["SELECTOR"]) == (
        "0", "disk=ssd", "app=agent")
    cache = get(api_server, ns, "replicasets", "-o", "wide")["cache"]
    assert (cache["DESIRED"], cache["CURRENT"], cache["READY"], cache["IMAGES"]) == (
        "1", "0", "0", "redis:7")
    assert headers(api_server, ns, "jobs") == [
        "NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    pi = get(api_server, ns, "jobs", "-o", "wide")["pi"]
    assert (pi["STATUS"], pi["COMPLETIONS"], pi["CONTAINERS"]) == ("Running", "0/3", "pi")
    assert pi["SELECTOR"].startswith("batch.platform.io/controller-uid=")
    assert headers(api_server, ns, "cronjobs") == [
        "NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    nightly = get(api_server, ns, "cronjobs")["nightly"]
    assert (nightly["SCHEDULE"], nightly["TIMEZONE"], nightly["SUSPEND"], nightly["ACTIVE"],
            nightly["LAST SCHEDULE"]) == ("0 3 * * *", "Etc/UTC", "False", "0", "<none>")


def test_pod_and_service_tables(api_server: ApiServerProcess, namespace: str) -> None:
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=POD_AND_SERVICES)
    ns = namespace
    assert headers(api_server, ns, "pods") == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    p1 = get(api_server, ns, "pods", "-o", "wide")["p1"]
    assert (p1["READY"], p1["STATUS"], p1["RESTARTS"]) == ("0/2", "Pending", "0")
    assert (p1["IP"], p1["NODE"], p1["NOMINATED NODE"], p1["READINESS GATES"]) == (
        "<none>", "<none>", "<none>", "<none>")
    assert headers(api_server, ns, "services") == [
        "NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    svcs = get(api_server, ns, "services", "-o", "wide")
    web = svcs["web"]
    assert (web["TYPE"], web["EXTERNAL-IP"], web["PORT(S)"], web["SELECTOR"]) == (
        "ClusterIP", "<none>", "80/TCP,53/UDP", "app=web")
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", web["CLUSTER-IP"])
    assert svcs["web-np"]["PORT(S)"] == "443:30443/TCP"
    ext = svcs["ext"]
    assert (ext["CLUSTER-IP"], ext["EXTERNAL-IP"], ext["PORT(S)"], ext["SELECTOR"]) == (
        "<none>", "db.example.com", "<none>", "<none>")


def test_config_identity_storage_and_rbac_tables(api_server: ApiServerProcess,
                                                 namespace: str) -> None:
    ns = namespace
    api_server.kubectl("apply", "-n", ns, "-f", "-", stdin=CONFIG.replace("NAMESPACE", ns))
    assert get(api_server, ns, "configmaps")["cfg"]["DATA"] == "2"
    creds = get(api_server, ns, "secrets")["creds"]
    assert (creds["TYPE"], creds["DATA"]) == ("Opaque", "3")
    assert headers(api_server, ns, "serviceaccounts") == ["NAME", "SECRETS", "AGE"]
    assert get(api_server, ns, "serviceaccounts")["builder"]["SECRETS"] == "0"
    assert get(api_server, ns, "leases")["leader"]["HOLDER"] == "node-1_abc"
    assert headers(api_server, ns, "pvc", "-o", "wide") == [
        "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "AGE", "VOLUMEMODE"]
    data = get(api_server, ns, "pvc", "-o", "wide")["data"]
    assert (data["STATUS"], data["STORAGECLASS"], data["VOLUMEATTRIBUTESCLASS"],
            data["VOLUMEMODE"]) == ("Pending", "fast", "<unset>", "Filesystem")
    assert headers(api_server, ns, "roles") == ["NAME", "CREATED AT"]
    created = get(api_server, ns, "roles")["reader"]["CREATED AT"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created)
    rb = get(api_server, ns, "rolebindings", "-o", "wide")["read-pods"]
    assert (rb["ROLE"], rb["USERS"], rb["GROUPS"], rb["SERVICEACCOUNTS"]) == (
        "Role/reader", "jane", "devs", f"{ns}:builder")
    status = table(api_server.kubectl("get", "namespace", ns).stdout)[0]
    assert (status["NAME"], status["STATUS"]) == (ns, "Active")


def test_event_table(api_server: ApiServerProcess, namespace: str) -> None:
    event = f"""
apiVersion: v1
kind: Event
metadata: {{name: p1.started, namespace: {namespace}}}
involvedObject: {{kind: Pod, name: p1, namespace: {namespace}, fieldPath: "spec.containers{{a}}"}}
reason: Started
message: Started container a
type: Normal
source: {{component: kubelet, host: node-1}}
count: 3
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
"""
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=event)
    assert headers(api_server, namespace, "events") == [
        "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    row = table(api_server.kubectl("get", "-n", namespace, "events", "-o", "wide").stdout)[0]
    assert (row["TYPE"], row["REASON"], row["OBJECT"], row["SUBOBJECT"], row["SOURCE"],
            row["MESSAGE"], row["COUNT"], row["NAME"]) == (
        "Normal", "Started", "pod/p1", "spec.containers{a}", "kubelet, node-1",
        "Started container a", "3", "p1.started")


def test_scale_subresource_prints_a_scale_table(api_server: ApiServerProcess,
                                                namespace: str) -> None:
    """kubectl get <workload> --subresource=scale: upstream prints a Scale's own columns
    (NAME DESIRED AVAILABLE AGE); the workload's columns were printed over it."""
    api_server.kubectl("-n", namespace, "create", "deployment", "web", "--image=nginx",
                       "--replicas=3")
    out = api_server.kubectl("-n", namespace, "get", "deployment", "web",
                             "--subresource=scale").stdout.splitlines()
    assert out[0].split() == ["NAME", "DESIRED", "AVAILABLE", "AGE"]
    assert out[1].split()[:3] == ["web", "3", "0"]
