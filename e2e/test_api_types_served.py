"""Stock kubectl against plat-server: the resources of upstream v1.33 that are served by
default (``kubectl api-resources`` / ``api-versions``), kinds served by the schema-driven
default strategy, the versions removed by 1.33 (404), the review resources behind
``kubectl auth whoami`` / ``auth can-i``, and the non-stored pod sub-resources.
"""

from __future__ import annotations

import json

import pytest

from apiserver.testing.launcher import ApiServerProcess

pytestmark = [pytest.mark.timeout(180)]

# ``kubectl api-resources -o wide`` of upstream v1.33 with the groups renamed: name,
# short names, apiVersion, namespaced, kind, verbs (ALL: the eight), categories; "-": empty.
EXPECTED = {
    ("bindings", "-", "v1", "true", "Binding", "create", "-"),
    ("componentstatuses", "cs", "v1", "false", "ComponentStatus", "get,list", "-"),
    ("configmaps", "cm", "v1", "true", "ConfigMap", "ALL", "-"),
    ("endpoints", "ep", "v1", "true", "Endpoints", "ALL", "-"),
    ("events", "ev", "v1", "true", "Event", "ALL", "-"),
    ("limitranges", "limits", "v1", "true", "LimitRange", "ALL", "-"),
    ("namespaces", "ns", "v1", "false",
     "Namespace", "create,delete,get,list,patch,update,watch", "-"),
    ("nodes", "no", "v1", "false", "Node", "ALL", "-"),
    ("persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim", "ALL", "-"),
    ("persistentvolumes", "pv", "v1", "false", "PersistentVolume", "ALL", "-"),
    ("pods", "po", "v1", "true", "Pod", "ALL", "all"),
    ("podtemplates", "-", "v1", "true", "PodTemplate", "ALL", "-"),
    ("replicationcontrollers", "rc", "v1", "true", "ReplicationController", "ALL", "all"),
    ("resourcequotas", "quota", "v1", "true", "ResourceQuota", "ALL", "-"),
    ("secrets", "-", "v1", "true", "Secret", "ALL", "-"),
    ("serviceaccounts", "sa", "v1", "true", "ServiceAccount", "ALL", "-"),
    ("services", "svc", "v1", "true", "Service", "ALL", "all"),
    ("mutatingwebhookconfigurations", "-", "admissionregistration.plat.io/v1", "false",
     "MutatingWebhookConfiguration", "ALL", "api-extensions"),
    ("validatingadmissionpolicies", "-", "admissionregistration.plat.io/v1", "false",
     "ValidatingAdmissionPolicy", "ALL", "api-extensions"),
    ("validatingadmissionpolicybindings", "-", "admissionregistration.plat.io/v1", "false",
     "ValidatingAdmissionPolicyBinding", "ALL", "api-extensions"),
    ("validatingwebhookconfigurations", "-", "admissionregistration.plat.io/v1", "false",
     "ValidatingWebhookConfiguration", "ALL", "api-extensions"),
    ("customresourcedefinitions", "crd,crds", "apiextensions.plat.io/v1", "false",
     "CustomResourceDefinition", "ALL", "api-extensions"),
    ("apiservices", "-", "apiregistration.plat.io/v1", "false",
     "APIService", "ALL", "api-extensions"),
    ("controllerrevisions", "-", "apps/v1", "true", "ControllerRevision", "ALL", "-"),
    ("daemonsets", "ds", "apps/v1", "true", "DaemonSet", "ALL", "all"),
    ("deployments", "deploy", "apps/v1", "true", "Deployment", "ALL", "all"),
    ("replicasets", "rs", "apps/v1", "true", "ReplicaSet", "ALL", "all"),
    ("statefulsets", "sts", "apps/v1", "true", "StatefulSet", "ALL", "all"),
    ("selfsubjectreviews", "-", "authentication.plat.io/v1", "false",
     "SelfSubjectReview", "create", "-"),
    ("tokenreviews", "-", "authentication.plat.io/v1", "false", "TokenReview", "create", "-"),
    ("localsubjectaccessreviews", "-", "authorization.plat.io/v1", "true",
     "LocalSubjectAccessReview", "create", "-"),
    ("selfsubjectaccessreviews", "-", "authorization.plat.io/v1", "false",
     "SelfSubjectAccessReview", "create", "-"),
    ("selfsubjectrulesreviews", "-", "authorization.plat.io/v1", "false",
     "SelfSubjectRulesReview", "create", "-"),
    ("subjectaccessreviews", "-", "authorization.plat.io/v1", "false",
     "SubjectAccessReview", "create", "-"),
    ("horizontalpodautoscalers", "hpa", "autoscaling/v2", "true",
     "HorizontalPodAutoscaler", "ALL", "all"),
    ("cronjobs", "cj", "batch/v1", "true", "CronJob", "ALL", "all"),
    ("jobs", "-", "batch/v1", "true", "Job", "ALL", "all"),
    ("certificatesigningrequests", "csr", "certificates.plat.io/v1", "false",
     "CertificateSigningRequest", "ALL", "-"),
    ("leases", "-", "coordination.plat.io/v1", "true", "Lease", "ALL", "-"),
    ("endpointslices", "-", "discovery.plat.io/v1", "true", "EndpointSlice", "ALL", "-"),
    ("events", "ev", "events.plat.io/v1", "true", "Event", "ALL", "-"),
    ("flowschemas", "-", "flowcontrol.apiserver.plat.io/v1", "false", "FlowSchema", "ALL", "-"),
    ("prioritylevelconfigurations", "-", "flowcontrol.apiserver.plat.io/v1", "false",
     "PriorityLevelConfiguration", "ALL", "-"),
    ("ingressclasses", "-", "networking.plat.io/v1", "false", "IngressClass", "ALL", "-"),
    ("ingresses", "ing", "networking.plat.io/v1", "true", "Ingress", "ALL", "-"),
    ("ipaddresses", "ip", "networking.plat.io/v1", "false", "IPAddress", "ALL", "-"),
    ("networkpolicies", "netpol", "networking.plat.io/v1", "true", "NetworkPolicy", "ALL", "-"),
    ("servicecidrs", "-", "networking.plat.io/v1", "false", "ServiceCIDR", "ALL", "-"),
    ("runtimeclasses", "-", "node.plat.io/v1", "false", "RuntimeClass", "ALL", "-"),
    ("poddisruptionbudgets", "pdb", "policy/v1", "true", "PodDisruptionBudget", "ALL", "-"),
    ("clusterrolebindings", "-", "rbac.authorization.plat.io/v1", "false",
     "ClusterRoleBinding", "ALL", "-"),
    ("clusterroles", "-", "rbac.authorization.plat.io/v1", "false", "ClusterRole", "ALL", "-"),
    ("rolebindings", "-", "rbac.authorization.plat.io/v1", "true", "RoleBinding", "ALL", "-"),
    ("roles", "-", "rbac.authorization.plat.io/v1", "true", "Role", "ALL", "-"),
    ("priorityclasses", "pc", "scheduling.plat.io/v1", "false", "PriorityClass", "ALL", "-"),
    ("csidrivers", "-", "storage.plat.io/v1", "false", "CSIDriver", "ALL", "-"),
    ("csinodes", "-", "storage.plat.io/v1", "false", "CSINode", "ALL", "-"),
    ("csistoragecapacities", "-", "storage.plat.io/v1", "true", "CSIStorageCapacity", "ALL", "-"),
    ("storageclasses", "sc", "storage.plat.io/v1", "false", "StorageClass", "ALL", "-"),
    ("volumeattachments", "-", "storage.plat.io/v1", "false", "VolumeAttachment", "ALL", "-"),
}
ALL = "create,delete,deletecollection,get,list,patch,update,watch"
COLUMNS = ("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES")


def api_resources(api: ApiServerProcess) -> set[tuple[str, ...]]:
    lines = api.kubectl("api-resources", "-o", "wide").stdout.splitlines()
    header = lines[0]
    starts = [header.index(c) for c in COLUMNS]
    rows = set()
    for line in lines[1:]:
        if not line.strip():
            continue
        cells = [line[s:(starts[i + 1] if i + 1 < len(starts) else None)].strip()
                 for i, s in enumerate(starts)]
        cells[5] = "ALL" if cells[5] == ALL else cells[5]
        rows.add(tuple(c or "-" for c in cells))
    return rows


def test_api_resources_are_upstream_v133(api_server: ApiServerProcess) -> None:
    want = EXPECTED
    got = api_resources(api_server)
    assert got - want == set() and want - got == set()
    names = api_server.kubectl("api-resources", "-o", "name").stdout.split()
    assert "deployments.apps" in names and "clusterroles.rbac.authorization.plat.io" in names


def test_api_versions(api_server: ApiServerProcess) -> None:
    got = api_server.kubectl("api-versions").stdout.split()
    assert got == [
        "admissionregistration.plat.io/v1", "apiextensions.plat.io/v1",
        "apiregistration.plat.io/v1", "apps/v1", "authentication.plat.io/v1",
        "authorization.plat.io/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
        "certificates.plat.io/v1", "coordination.plat.io/v1", "discovery.plat.io/v1",
        "events.plat.io/v1", "flowcontrol.apiserver.plat.io/v1", "networking.plat.io/v1",
        "node.plat.io/v1", "policy/v1", "rbac.authorization.plat.io/v1",
        "scheduling.plat.io/v1", "storage.plat.io/v1", "v1"]


DEFAULT_KINDS = """
apiVersion: scheduling.plat.io/v1
kind: PriorityClass
metadata: {name: e2e-high}
value: 100000
description: important
---
apiVersion: networking.plat.io/v1
kind: IngressClass
metadata: {name: e2e-nginx}
spec: {controller: example.com/ingress-nginx}
---
apiVersion: storage.plat.io/v1
kind: StorageClass
metadata: {name: e2e-fast}
provisioner: example.com/fast
reclaimPolicy: Retain
---
apiVersion: node.plat.io/v1
kind: RuntimeClass
metadata: {name: e2e-gvisor}
handler: runsc
---
apiVersion: rbac.authorization.plat.io/v1
kind: ClusterRole
metadata: {name: "e2e:reader"}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list]
"""


def test_kinds_of_the_default_strategy(api_server: ApiServerProcess) -> None:
    out = api_server.kubectl("apply", "-f", "-", stdin=DEFAULT_KINDS).stdout
    for line in ("priorityclass.scheduling.plat.io/e2e-high created",
                 "ingressclass.networking.plat.io/e2e-nginx created",
                 "storageclass.storage.plat.io/e2e-fast created",
                 "runtimeclass.node.plat.io/e2e-gvisor created",
                 "clusterrole.rbac.authorization.plat.io/e2e:reader created"):
        assert line in out
    try:
        pc = json.loads(api_server.kubectl("get", "pc", "e2e-high", "-o", "json").stdout)
        assert (pc["kind"], pc["apiVersion"], pc["value"]) == (
            "PriorityClass", "scheduling.plat.io/v1", 100000)
        assert pc["metadata"]["uid"] and pc["metadata"]["resourceVersion"]
        sc = json.loads(api_server.kubectl("get", "sc", "e2e-fast", "-o", "json").stdout)
        assert sc["provisioner"] == "example.com/fast"
        # upstream defaults of the default strategy's kinds
        assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Retain", "Immediate")
        assert pc["preemptionPolicy"] == "PreemptLowerPriority"
        names = api_server.kubectl("get", "runtimeclasses", "-o", "name").stdout.split()
        assert "runtimeclass.node.plat.io/e2e-gvisor" in names
        cr = json.loads(api_server.kubectl("get", "clusterrole", "e2e:reader",
                                           "-o", "json").stdout)
        assert cr["rules"] == [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["get", "list"]}]
        assert "e2e-nginx" in api_server.kubectl("get", "ingressclasses").stdout
        # a name the kind's rule rejects: the upstream 422
        bad = api_server.kubectl("apply", "-f", "-", check=False, stdin=(
            "apiVersion: scheduling.plat.io/v1\nkind: PriorityClass\n"
            "metadata: {name: Bad_Name}\nvalue: 1\n"))
        assert bad.returncode != 0
        assert 'The PriorityClass "Bad_Name" is invalid: metadata.name: Invalid value: ' \
            '"Bad_Name": a lowercase RFC 1123 subdomain' in bad.stderr
    finally:
        out = api_server.kubectl("delete", "-f", "-", stdin=DEFAULT_KINDS).stdout
    assert "priorityclass.scheduling.plat.io \"e2e-high\" deleted" in out
    gone = api_server.kubectl("get", "pc", "e2e-high", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


@pytest.mark.parametrize("path", [
    "/apis/batch/v1beta1", "/apis/batch/v1beta1/namespaces/default/cronjobs",
    "/apis/policy/v1beta1", "/apis/policy/v1beta1/poddisruptionbudgets",
    "/apis/flowcontrol.apiserver.plat.io/v1beta3",
    "/apis/flowcontrol.apiserver.plat.io/v1beta3/flowschemas",
    "/apis/autoscaling/v2beta2", "/apis/discovery.plat.io/v1beta1",
    "/apis/events.plat.io/v1beta1", "/apis/node.plat.io/v1beta1",
    "/apis/storage.plat.io/v1beta1/csistoragecapacities",
])
def test_removed_versions_are_not_served(api_server: ApiServerProcess, path: str) -> None:
    r = api_server.kubectl("get", "--raw", path, check=False)
    assert r.returncode != 0
    assert "NotFound" in r.stderr


def test_manifest_for_a_removed_version(api_server: ApiServerProcess, namespace: str) -> None:
    # (--validate=false: client-side validation of an unknown group version falls back to
    # /openapi/v2, which is not this test's subject)
    r = api_server.kubectl("apply", "-n", namespace, "--validate=false", "-f", "-",
                           check=False, stdin=(
        "apiVersion: batch/v1beta1\nkind: CronJob\nmetadata: {name: old}\n"
        "spec: {schedule: '* * * * *', jobTemplate: {spec: {template: {spec: "
        "{restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}}\n"))
    assert r.returncode != 0
    assert 'no matches for kind "CronJob" in version "batch/v1beta1"' in r.stderr


def test_auth_whoami_and_can_i(api_server: ApiServerProcess) -> None:
    out = api_server.kubectl("auth", "whoami").stdout
    assert out.splitlines()[0].split() == ["ATTRIBUTE", "VALUE"]
    assert "Username" in out and "system:masters" in out
    who = json.loads(api_server.kubectl("auth", "whoami", "-o", "json").stdout)
    assert who["kind"] == "SelfSubjectReview"
    assert "system:authenticated" in who["status"]["userInfo"]["groups"]
    assert api_server.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert api_server.kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    listed = api_server.kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in listed
    # the renamed review resources are served under their own names too
    body = json.dumps({"apiVersion": "authorization.plat.io/v1",
                       "kind": "SelfSubjectAccessReview",
                       "spec": {"resourceAttributes": {"verb": "get", "resource": "pods",
                                                       "namespace": "default"}}})
    got = json.loads(api_server.kubectl(
        "create", "--raw", "/apis/authorization.plat.io/v1/selfsubjectaccessreviews",
        "-f", "-", stdin=body).stdout)
    assert got["status"]["allowed"] is True


POD = """
apiVersion: v1
kind: Pod
metadata:
  name: p
  labels: {app: e2e}
spec:
  containers: [{name: c, image: busybox}]
"""


def test_pod_binding_and_eviction(api_server: ApiServerProcess, namespace: str) -> None:
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=POD)
    binding = json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                          "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
    base = f"/api/v1/namespaces/{namespace}/pods/p"
    api_server.kubectl("create", "--raw", f"{base}/binding", "-f", "-", stdin=binding)
    pod = json.loads(api_server.kubectl("get", "pod", "p", "-n", namespace, "-o",
                                        "json").stdout)
    assert pod["spec"]["nodeName"] == "node-1"
    again = api_server.kubectl("create", "--raw", f"{base}/binding", "-f", "-", check=False,
                               stdin=binding)
    assert again.returncode != 0 and "is already assigned to node" in again.stderr
    logs = api_server.kubectl("logs", "p", "-n", namespace, check=False)
    assert logs.returncode != 0
    api_server.kubectl("patch", "pod", "p", "-n", namespace, "--subresource=status",
                       "--type=merge", "-p", json.dumps({"status": {
                           "phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True"}]}}))
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: e2e}}}\n"))
    eviction = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction",
                           "metadata": {"name": "p", "namespace": namespace}})
    refused = api_server.kubectl("create", "--raw", f"{base}/eviction", "-f", "-",
                                 check=False, stdin=eviction)
    assert refused.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in refused.stderr
    api_server.kubectl("delete", "pdb", "keep", "-n", namespace)
    api_server.kubectl("create", "--raw", f"{base}/eviction", "-f", "-", stdin=eviction)
    gone = api_server.kubectl("get", "pod", "p", "-n", namespace, check=False)
    assert gone.returncode != 0 or "Terminating" in gone.stdout


def test_component_statuses(api_server: ApiServerProcess) -> None:
    out = api_server.kubectl("get", "componentstatuses").stdout
    assert out.split()[:4] == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    assert "etcd-0" in out and "Healthy" in out


def test_hpa_served_as_v2_and_v1(api_server: ApiServerProcess, namespace: str) -> None:
    ns = ("-n", namespace)
    api_server.kubectl("create", "deployment", "web", "--image=nginx", *ns)
    api_server.kubectl("autoscale", "deployment", "web", "--max=5", "--cpu-percent=60", *ns)
    v2 = json.loads(api_server.kubectl("get", "hpa", "web", "-o", "json", *ns).stdout)
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["minReplicas"] == 1
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
    v1 = json.loads(api_server.kubectl(
        "get", "--raw",
        f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers/web").stdout)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": {"kind": "Deployment", "name": "web",
                                             "apiVersion": "apps/v1"},
                          "minReplicas": 1, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 60}
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    api_server.kubectl("apply", *ns, "-f", "-", stdin=(
        "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: old}\n"
        "spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web},\n"
        "       maxReplicas: 3, targetCPUUtilizationPercentage: 50}\n"))
    old = json.loads(api_server.kubectl("get", "hpa", "old", "-o", "json", *ns).stdout)
    assert old["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 50
    bad = api_server.kubectl("apply", *ns, "-f", "-", check=False, stdin=(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: bad}\n"
        "spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web},\n"
        "       minReplicas: 4, maxReplicas: 3}\n"))
    assert bad.returncode != 0
    assert "spec.maxReplicas: Invalid value: 3: must be greater than or equal to " \
        "`minReplicas`" in bad.stderr


def test_drain_evicts_through_the_eviction_subresource(api_server: ApiServerProcess,
                                                       namespace: str) -> None:
    node = f"node-{namespace}"
    api_server.kubectl("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Node\n"
                       f"metadata: {{name: {node}}}\n")
    try:
        api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\n"
            f"spec: {{nodeName: {node}, containers: [{{name: c, image: busybox}}]}}\n"))
        out = api_server.kubectl("drain", node, "--force", "--timeout=60s").stdout
        assert f"node/{node} cordoned" in out
        assert "pod/w evicted" in out and f"node/{node} drained" in out
        gone = api_server.kubectl("get", "pod", "w", "-n", namespace, check=False)
        assert gone.returncode != 0 and "NotFound" in gone.stderr
    finally:
        api_server.kubectl("delete", "node", node, check=False)


def test_exec_and_attach_answer_what_upstream_answers(api_server: ApiServerProcess,
                                                      namespace: str) -> None:
    """kubectl exec falls back from a WebSocket to a POST with an empty body; that POST was
    decoded as a PodExecOptions (a JSON error) instead of getting the real answer."""
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: unbound}\n"
        "spec: {containers: [{name: c, image: busybox}]}\n"))
    out = api_server.kubectl("exec", "-n", namespace, "unbound", "--", "ls", check=False)
    assert out.returncode != 0
    assert "pod unbound does not have a host assigned" in out.stderr
    assert "json" not in out.stderr.lower()
    api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bound}\n"
        "spec: {nodeName: n1, containers: [{name: c, image: busybox}]}\n"))
    for cmd in (("exec", "bound", "--", "ls"), ("attach", "bound")):
        out = api_server.kubectl("-n", namespace, *cmd, check=False, timeout=60)
        assert out.returncode != 0
        assert "no connection to node agents" in out.stderr, out.stderr


INVALID_OBJECTS = [
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: both}\n"
     "spec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {a: b}}}\n",
     "minAvailable and maxUnavailable cannot be both set"),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pct}\n"
     "spec: {minAvailable: 120%}\n", 'spec.minAvailable: Invalid value: '
     'intstr.IntOrString{Type:1, IntVal:0, StrVal:"120%"}: must not be greater than 100%'),
    ("apiVersion: scheduling.plat.io/v1\nkind: PriorityClass\nmetadata: {name: huge}\n"
     "value: 2000000000\n", "value: Forbidden: maximum allowed value of a user defined "
     "priority is 1000000000"),
    ("apiVersion: scheduling.plat.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\n"
     "value: 10\n", "priority class names with 'system-' prefix are reserved for system use "
     "only. error: system-mine is not a known system priority class"),
    ("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: neg}\nspec: {hard: {pods: '-1'}}\n",
     "spec.hard[pods]: Invalid value: \"-1\": must be greater than or equal to 0"),
    ("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: scopes}\n"
     "spec: {hard: {pods: '1'}, scopes: [BestEffort, NotBestEffort]}\n", "conflicting scopes"),
    ("apiVersion: storage.plat.io/v1\nkind: StorageClass\nmetadata: {name: bad}\n"
     "provisioner: example.com/x\nreclaimPolicy: Foo\n",
     'reclaimPolicy: Unsupported value: "Foo": supported values: "Delete", "Retain"'),
    ("apiVersion: node.plat.io/v1\nkind: RuntimeClass\nmetadata: {name: rc}\n"
     "handler: Not Valid\n", "handler: Invalid value: \"Not Valid\""),
    ("apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr}\n"
     "spec: {limits: [{type: Container, min: {cpu: '2'}, max: {cpu: '1'}}]}\n",
     "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1"),
    ("apiVersion: v1\nkind: LimitRange\nmetadata: {name: lrpod}\n"
     "spec: {limits: [{type: Pod, default: {cpu: '1'}}]}\n",
     "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"),
    ("apiVersion: networking.plat.io/v1\nkind: Ingress\nmetadata: {name: ing}\n"
     "spec: {rules: [{host: 10.0.0.1, http: {paths: [{path: nopath, pathType: Prefix, "
     "backend: {service: {name: s, port: {}}}}]}}]}\n",
     "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP "
     "address"),
    ("apiVersion: networking.plat.io/v1\nkind: Ingress\nmetadata: {name: ing2}\n"
     "spec: {rules: [{http: {paths: [{path: nopath, pathType: Prefix, "
     "backend: {service: {name: s, port: {}}}}]}}]}\n",
     'spec.rules[0].http.paths[0].path: Invalid value: "nopath": must be an absolute path'),
    ("apiVersion: networking.plat.io/v1\nkind: Ingress\nmetadata: {name: ing3}\n"
     "spec: {rules: [{http: {paths: [{path: /, pathType: Prefix, "
     "backend: {service: {name: s, port: {}}}}]}}]}\n",
     "spec.rules[0].http.paths[0].backend: Required value: port name or number is "
     "required"),
    ("apiVersion: discovery.plat.io/v1\nkind: EndpointSlice\nmetadata: {name: es}\n"
     "addressType: IPv4\nendpoints: [{addresses: [not-an-ip]}]\n",
     'endpoints[0].addresses[0]: Invalid value: "not-an-ip": must be a valid IPv4 address'),
    ("apiVersion: admissionregistration.plat.io/v1\nkind: ValidatingWebhookConfiguration\n"
     "metadata: {name: wh}\nwebhooks: [{name: nodots, sideEffects: Foo, "
     "admissionReviewVersions: [v1], clientConfig: {url: 'https://example.com/x'}}]\n",
     'webhooks[0].name: Invalid value: "nodots": should be a domain with at least three '
     'segments separated by dots'),
    ("apiVersion: networking.plat.io/v1\nkind: NetworkPolicy\nmetadata: {name: np}\n"
     "spec: {podSelector: {}, ingress: [{ports: [{port: 70000}]}]}\n",
     "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, "
     "inclusive"),
]


@pytest.mark.parametrize(("manifest", "message"), INVALID_OBJECTS,
                         ids=[m.split("kind: ")[1].split("\n")[0] + str(i)
                              for i, (m, _) in enumerate(INVALID_OBJECTS)])
def test_kinds_without_a_strategy_module_are_validated(api_server: ApiServerProcess,
                                                       namespace: str, manifest: str,
                                                       message: str) -> None:
    """These were all created: only kinds with a strategy module had their rules."""
    out = api_server.kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest,
                             check=False)
    assert out.returncode != 0, out.stdout
    assert message in out.stderr, out.stderr
