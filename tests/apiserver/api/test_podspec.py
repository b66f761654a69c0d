from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.api import podspec
from apiserver.api.podspec import (
    canonical_quantity,
    default_pod,
    default_pod_spec,
    default_pod_template,
    validate_pod_spec,
    validate_pod_template,
)


def spec(**extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.25"}]}
    out.update(extra)
    return out


def defaulted(s: dict[str, Any]) -> dict[str, Any]:
    default_pod_spec(s)
    return s


def errors(s: dict[str, Any], **kw: Any) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in validate_pod_spec(defaulted(s), "spec", **kw)]


# ---------------------------------------------------------------------------------------------
# defaulting


def test_pod_spec_defaults() -> None:
    s = defaulted(spec())
    assert s == {
        "containers": [{"name": "app", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                        "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"}


@pytest.mark.parametrize("image,policy", [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.25", "IfNotPresent"),
    ("registry.local:5000/nginx", "Always"), ("registry.local:5000/nginx:2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ("", "IfNotPresent"), ("Nginx", "IfNotPresent"), (" nginx", "IfNotPresent"),
])
def test_image_pull_policy_by_tag(image: str, policy: str) -> None:
    s = defaulted(spec(containers=[{"name": "c", "image": image}]))
    assert s["containers"][0]["imagePullPolicy"] == policy
    s = defaulted(spec(containers=[{"name": "c"}]))
    assert s["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_explicit_values_are_kept() -> None:
    s = defaulted(spec(restartPolicy="Never", dnsPolicy="Default", schedulerName="mine",
                       terminationGracePeriodSeconds=0))
    assert (s["restartPolicy"], s["dnsPolicy"], s["schedulerName"],
            s["terminationGracePeriodSeconds"]) == ("Never", "Default", "mine", 0)


def test_container_parts_defaults() -> None:
    c = {"name": "c", "image": "x:1",
         "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
         "livenessProbe": {"httpGet": {"port": 8080}},
         "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 5},
         "startupProbe": {"grpc": {"port": 9000}},
         "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
         "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    s = defaulted(spec(containers=[c]))
    out = s["containers"][0]
    assert out["ports"] == [{"containerPort": 80, "protocol": "TCP"},
                            {"containerPort": 53, "protocol": "UDP"}]
    assert out["livenessProbe"] == {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
                                    "timeoutSeconds": 1, "periodSeconds": 10,
                                    "successThreshold": 1, "failureThreshold": 3}
    assert out["readinessProbe"]["periodSeconds"] == 5
    assert out["startupProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert out["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/stop",
                                                      "scheme": "HTTP"}
    assert out["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1",
                                                      "fieldPath": "metadata.name"}


def test_volume_defaults() -> None:
    vols = [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}},
            {"name": "c", "configMap": {"name": "cm", "defaultMode": 256}},
            {"name": "d", "hostPath": {"path": "/x"}},
            {"name": "e", "downwardAPI": {"items": [
                {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"name": "f", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
            {"name": "g", "emptyDir": {"sizeLimit": "1024Mi"}},
            {"name": "h", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    s = defaulted(spec(volumes=vols))
    v = {x["name"]: x for x in s["volumes"]}
    assert v["a"] == {"name": "a", "emptyDir": {}}
    assert v["b"]["secret"] == {"secretName": "s", "defaultMode": 420}
    assert v["c"]["configMap"]["defaultMode"] == 256
    assert v["d"]["hostPath"] == {"path": "/x", "type": ""}
    assert v["e"]["downwardAPI"] == {"defaultMode": 420, "items": [
        {"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}]}
    assert v["f"]["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}
    assert v["g"]["emptyDir"] == {"sizeLimit": "1024Mi"}
    assert v["h"]["ephemeral"]["volumeClaimTemplate"]["spec"] == {"volumeMode": "Filesystem"}


def test_host_network_ports_and_service_account_mirror() -> None:
    s = defaulted(spec(hostNetwork=True, serviceAccountName="robot", containers=[
        {"name": "c", "image": "x:1", "ports": [{"containerPort": 8080}]}]))
    assert "hostPort" not in s["containers"][0]["ports"][0]  # templates keep hostPort unset
    assert errors(copy.deepcopy(s)) == []
    pod = {"spec": copy.deepcopy(s)}
    default_pod(pod)
    assert pod["spec"]["containers"][0]["ports"][0]["hostPort"] == 8080
    s["containers"][0]["ports"][0]["hostPort"] = 9090
    assert errors(s) == [("spec.containers[0].ports[0].containerPort",
                          "Invalid value: 8080: must match `hostPort` when `hostNetwork` is "
                          "true")]
    assert s["serviceAccount"] == "robot"
    s = defaulted(spec(serviceAccount="old"))
    assert s["serviceAccountName"] == "old"


def test_template_and_pod_only_defaults() -> None:
    limits = {"cpu": "500m", "memory": "128Mi"}
    tpl: dict[str, Any] = {"spec": spec(containers=[
        {"name": "c", "image": "x:1", "resources": {"limits": dict(limits)}}])}
    default_pod_template(tpl)
    assert tpl["metadata"] == {"creationTimestamp": None}
    assert "enableServiceLinks" not in tpl["spec"]
    assert tpl["spec"]["containers"][0]["resources"] == {"limits": limits}
    pod = {"spec": copy.deepcopy(tpl["spec"])}
    default_pod(pod)
    assert pod["spec"]["enableServiceLinks"] is True
    assert pod["spec"]["containers"][0]["resources"] == {"limits": limits, "requests": limits}


@pytest.mark.parametrize("text,canonical", [
    ("1000m", "1"), ("1500m", "1500m"), ("0.5", "500m"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"),
    ("128974848", "128974848"), ("129e6", "129e6"), ("1k", "1k"), ("0", "0"), ("100Mi", "100Mi"),
    ("1e3", "1e3"), ("2000", "2k"), ("0.1Gi", "107374182400m"), ("junk", "junk"),
    # "E" alone is exa (it was read as an exponent without digits: a 500)
    ("1E", "1E"), ("2E", "2E"), ("0E", "0"), ("1.5E", "1500P"), ("1E3", "1e3"),
    # upstream caps the magnitude at the largest int64 (this was rounded to 28 digits)
    ("99999999999999999999999999999999", "9223372036854775807"), ("8Ei", "9223372036854775807"),
    ("-99999999999999999999999E", "-9223372036854775807"), ("1e999999", "9223372036854775807"),
    # non-zero values round away from zero to a nano unit
    ("0.0000000001", "1n"), ("-1.5n", "-2n"), ("1e-999999", "1e-9"),
    # an exponent beyond int32 does not parse (it raised)
    ("1e9999999999", "1e9999999999"),
])
def test_quantity_canonical_form(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical


def test_requests_and_limits_are_written_back_canonical() -> None:
    s = defaulted(spec(containers=[{"name": "c", "image": "x:1", "resources": {
        "requests": {"cpu": "0.25", "memory": "1024Mi"}, "limits": {"cpu": "1000m"}}}]))
    assert s["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "1Gi"},
                                               "limits": {"cpu": "1"}}


# ---------------------------------------------------------------------------------------------
# validation


def test_valid_spec_has_no_errors() -> None:
    s = spec(volumes=[{"name": "data", "emptyDir": {}}], initContainers=[
        {"name": "init", "image": "busybox"}], containers=[
        {"name": "app", "image": "nginx:1.25",
         "ports": [{"name": "http", "containerPort": 80}],
         "env": [{"name": "A", "value": "1"},
                 {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
         "volumeMounts": [{"name": "data", "mountPath": "/data"}],
         "livenessProbe": {"httpGet": {"port": "http"}},
         "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}}])
    assert errors(s) == []


@pytest.mark.parametrize("mutate,field,message", [
    (lambda s: s.update(containers=[]), "spec.containers", "Required value"),
    (lambda s: s["containers"][0].pop("name"), "spec.containers[0].name", "Required value"),
    (lambda s: s["containers"][0].update(name="Bad_Name"), "spec.containers[0].name",
     'Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
     "alphanumeric characters or '-', and must start and end with an alphanumeric character "
     "(e.g. 'my-name',  or '123-abc', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    (lambda s: s.update(initContainers=[{"name": "app", "image": "x"}]),
     "spec.containers[0].name", 'Duplicate value: "app"'),
    (lambda s: s["containers"][0].pop("image"), "spec.containers[0].image", "Required value"),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 70000}]),
     "spec.containers[0].ports[0].containerPort",
     "Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
     "spec.containers[0].ports[0].protocol",
     'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 80, "name": "web"},
                                                {"containerPort": 81, "name": "web"}]),
     "spec.containers[0].ports[1].name", 'Duplicate value: "web"'),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 80,
                                                 "name": "a-very-long-port-name"}]),
     "spec.containers[0].ports[0].name",
     'Invalid value: "a-very-long-port-name": must be no more than 15 characters'),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 80, "hostPort": 8080}]) or
     s.update(initContainers=[{"name": "i", "image": "x",
                               "ports": [{"containerPort": 81, "hostPort": 8080}]}]),
     "spec.containers[0].ports[0].hostPort", 'Duplicate value: "TCP//8080"'),
    (lambda s: s["containers"][0].update(env=[{"value": "x"}]),
     "spec.containers[0].env[0].name", "Required value"),
    (lambda s: s["containers"][0].update(env=[{"name": "A=B"}]),
     "spec.containers[0].env[0].name",
     "Invalid value: \"A=B\": a valid environment variable name must consist only of "
     "printable ASCII characters other than '='"),
    (lambda s: s["containers"][0].update(env=[{"name": "A", "valueFrom": {}}]),
     "spec.containers[0].env[0].valueFrom",
     'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
     "`configMapKeyRef` or `secretKeyRef`"),
    (lambda s: s["containers"][0].update(env=[{"name": "A", "value": "v", "valueFrom": {
        "configMapKeyRef": {"name": "c", "key": "k"}}}]),
     "spec.containers[0].env[0].valueFrom",
     'Invalid value: "": may not be specified when `value` is not empty'),
    (lambda s: s["containers"][0].update(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"fieldPath": "spec.hostname"}}}]),
     "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
     'Unsupported value: "spec.hostname": supported values: "metadata.name", '
     '"metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
     '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'),
    (lambda s: s["containers"][0].update(envFrom=[{}]), "spec.containers[0].envFrom[0]",
     'Invalid value: "": must specify one of: `configMapRef` or `secretRef`'),
    (lambda s: s.update(volumes=[{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]),
     "spec.volumes[1].name", 'Duplicate value: "a"'),
    (lambda s: s.update(volumes=[{"name": "a", "emptyDir": {}, "hostPath": {"path": "/x"}}]),
     "spec.volumes[0].emptyDir", "Forbidden: may not specify more than 1 volume type"),
    (lambda s: s.update(volumes=[{"name": "a", "configMap": {}}]),
     "spec.volumes[0].configMap.name", "Required value"),
    (lambda s: s.update(volumes=[{"name": "a", "secret": {}}]),
     "spec.volumes[0].secret.secretName", "Required value"),
    (lambda s: s.update(volumes=[{"name": "a", "secret": {"secretName": "Bad_"}}]),
     "spec.volumes[0].secret.secretName",
     'Invalid value: "Bad_": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (lambda s: s.update(volumes=[{"name": "a", "secret": {"secretName": "s",
                                                          "defaultMode": 1000}}]),
     "spec.volumes[0].secret.defaultMode",
     "Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive"),
    (lambda s: s.update(volumes=[{"name": "a", "persistentVolumeClaim": {}}]),
     "spec.volumes[0].persistentVolumeClaim.claimName", "Required value"),
    (lambda s: s["containers"][0].update(volumeMounts=[{"name": "nope", "mountPath": "/x"}]),
     "spec.containers[0].volumeMounts[0].name", 'Not found: "nope"'),
    (lambda s: s.update(volumes=[{"name": "a", "emptyDir": {}}]) or s["containers"][0].update(
        volumeMounts=[{"name": "a"}]),
     "spec.containers[0].volumeMounts[0].mountPath", "Required value"),
    (lambda s: s.update(volumes=[{"name": "a", "emptyDir": {}}]) or s["containers"][0].update(
        volumeMounts=[{"name": "a", "mountPath": "/x"}, {"name": "a", "mountPath": "/x"}]),
     "spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/x": must be unique'),
    (lambda s: s["containers"][0].update(livenessProbe={"periodSeconds": 3}),
     "spec.containers[0].livenessProbe", "Required value: must specify a handler type"),
    (lambda s: s["containers"][0].update(livenessProbe={"exec": {"command": ["true"]},
                                                        "tcpSocket": {"port": 80}}),
     "spec.containers[0].livenessProbe.tcpSocket",
     "Forbidden: may not specify more than 1 handler type"),
    (lambda s: s["containers"][0].update(livenessProbe={"tcpSocket": {"port": 80},
                                                        "successThreshold": 2}),
     "spec.containers[0].livenessProbe.successThreshold", "Invalid value: 2: must be 1"),
    (lambda s: s["containers"][0].update(readinessProbe={"tcpSocket": {"port": 80},
                                                         "timeoutSeconds": -1}),
     "spec.containers[0].readinessProbe.timeoutSeconds",
     "Invalid value: -1: must be greater than or equal to 0"),
    (lambda s: s["containers"][0].update(readinessProbe={"httpGet": {"port": 0}}),
     "spec.containers[0].readinessProbe.httpGet.port",
     "Invalid value: 0: must be between 1 and 65535, inclusive"),
    (lambda s: s["containers"][0].update(resources={"requests": {"cpu": "2"},
                                                    "limits": {"cpu": "1000m"}}),
     "spec.containers[0].resources.requests",
     'Invalid value: "2": must be less than or equal to cpu limit of 1'),
    (lambda s: s["containers"][0].update(resources={"requests": {"memory": "-1Mi"}}),
     "spec.containers[0].resources.requests[memory]",
     'Invalid value: "-1Mi": must be greater than or equal to 0'),
    (lambda s: s["containers"][0].update(resources={"limits": {"gpu": "1"}}),
     "spec.containers[0].resources.limits[gpu]",
     'Invalid value: "gpu": must be a standard resource for containers'),
    (lambda s: s["containers"][0].update(resources={"requests": {"example.com/dev": "1"}}),
     "spec.containers[0].resources.limits",
     "Required value: Limit must be set for non overcommitable resources"),
    (lambda s: s["containers"][0].update(resources={"requests": {"example.com/dev": "1"},
                                                    "limits": {"example.com/dev": "2"}}),
     "spec.containers[0].resources.requests",
     'Invalid value: "1": must be equal to example.com/dev limit of 2'),
    (lambda s: s["containers"][0].update(imagePullPolicy="Sometimes"),
     "spec.containers[0].imagePullPolicy",
     'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'),
    (lambda s: s.update(restartPolicy="Sometimes"), "spec.restartPolicy",
     'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    (lambda s: s.update(dnsPolicy="Cluster"), "spec.dnsPolicy",
     'Unsupported value: "Cluster": supported values: "ClusterFirst", '
     '"ClusterFirstWithHostNet", "Default", "None"'),
    (lambda s: s.update(dnsPolicy="None"), "spec.dnsConfig",
     "Required value: must provide `dnsConfig` when `dnsPolicy` is None"),
    (lambda s: s.update(activeDeadlineSeconds=0), "spec.activeDeadlineSeconds",
     "Invalid value: 0: must be between 1 and 2147483647, inclusive"),
    (lambda s: s.update(serviceAccountName="Robot"), "spec.serviceAccountName",
     'Invalid value: "Robot": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    (lambda s: s.update(tolerations=[{"operator": "Equal", "value": "x"}]),
     "spec.tolerations[0].operator",
     'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match '
     'all values and all keys"'),
    (lambda s: s.update(tolerations=[{"key": "k", "operator": "Exists",
                                      "tolerationSeconds": 5, "effect": "NoSchedule"}]),
     "spec.tolerations[0].effect",
     "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is "
     "set"),
    (lambda s: s.update(initContainers=[{"name": "i", "image": "x",
                                         "restartPolicy": "OnFailure"}]),
     "spec.initContainers[0].restartPolicy",
     'Unsupported value: "OnFailure": supported values: "Always"'),
    (lambda s: s.update(initContainers=[{"name": "i", "image": "x",
                                         "readinessProbe": {"tcpSocket": {"port": 1}}}]),
     "spec.initContainers[0].readinessProbe",
     "Forbidden: may not be set for init containers without restartPolicy=Always"),
    (lambda s: s["containers"][0].update(restartPolicy="Always"),
     "spec.containers[0].restartPolicy", "Forbidden: may not be set for non-init containers"),
    (lambda s: s.update(dnsPolicy="None", dnsConfig={"searches": ["a.b"]}),
     "spec.dnsConfig.nameservers",
     "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"),
    (lambda s: s.update(dnsConfig={"nameservers": ["1.1.1.1", "x"]}),
     "spec.dnsConfig.nameservers[1]",
     'Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
    (lambda s: s.update(dnsConfig={"options": [{"value": "2"}]}), "spec.dnsConfig.options[0]",
     "Required value: must not be empty"),
    (lambda s: s.update(hostAliases=[{"ip": "10.0.0.300", "hostnames": ["a"]}]),
     "spec.hostAliases[0].ip",
     'Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or '
     "2001:db8::ffff)"),
    (lambda s: s.update(os={"name": "plan9"}), "spec.os.name",
     'Unsupported value: "plan9": supported values: "linux", "windows"'),
    (lambda s: s.update(volumes=[{"name": "p", "projected": {"sources": [
        {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}}]}}]),
     "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds",
     "Invalid value: 60: may not specify a duration less than 10 minutes"),
    (lambda s: s.update(volumes=[{"name": "p", "projected": {"sources": [
        {"secret": {"name": "s"}, "configMap": {"name": "c"}}]}}]),
     "spec.volumes[0].projected.sources[0]",
     "Forbidden: may not specify more than 1 volume type per source"),
    (lambda s: s.update(volumes=[{"name": "d", "downwardAPI": {"items": [
        {"path": "/abs", "fieldRef": {"fieldPath": "metadata.name"}}]}}]),
     "spec.volumes[0].downwardAPI.items[0].path",
     'Invalid value: "/abs": must be a relative path'),
    (lambda s: s.update(volumes=[{"name": "d", "downwardAPI": {"items": [
        {"path": "ip", "fieldRef": {"fieldPath": "status.podIP"}}]}}]),
     "spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath",
     'Unsupported value: "status.podIP": supported values: "metadata.annotations", '
     '"metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"'),
    (lambda s: s.update(securityContext={"runAsUser": -1}), "spec.securityContext.runAsUser",
     "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
    (lambda s: s["containers"][0].update(securityContext={"seccompProfile": {
        "type": "Localhost"}}), "spec.containers[0].securityContext.seccompProfile."
     "localhostProfile", "Required value: must be set when seccomp type is Localhost"),
    (lambda s: s.update(securityContext={"seccompProfile": {"type": "Strict"}}),
     "spec.securityContext.seccompProfile.type", 'Unsupported value: "Strict": supported '
     'values: "Localhost", "RuntimeDefault", "Unconfined"'),
    (lambda s: s.update(topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.topologySpreadConstraints[0].maxSkew", "Invalid value: 0: must be greater than zero"),
    (lambda s: s.update(topologySpreadConstraints=[
        {"maxSkew": 1, "whenUnsatisfiable": "Maybe"}]),
     "spec.topologySpreadConstraints[0].whenUnsatisfiable",
     'Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"'),
    (lambda s: s.update(topologySpreadConstraints=[
        {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.topologySpreadConstraints[0].topologyKey", "Required value: can not be empty"),
    (lambda s: s.update(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"},
        {"maxSkew": 2, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway"}]),
     "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
     'Duplicate value: "{z, ScheduleAnyway}"'),
    (lambda s: s.update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
     "nodeSelectorTerms", "Required value: must have at least one node selector term"),
    (lambda s: s.update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In"}]}]}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
     "nodeSelectorTerms[0].matchExpressions[0].values",
     "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (lambda s: s.update(affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {}}]}}),
     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
     "Invalid value: 0: must be in the range 1-100"),
    (lambda s: s.update(affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}}]}}),
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
     "topologyKey", "Required value: can not be empty"),
])
def test_validation(mutate: Any, field: str, message: str) -> None:
    s = spec()
    mutate(s)
    assert (field, message) in errors(s)


def test_common_scheduling_settings_are_valid() -> None:
    s = spec(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "topology.platform.io/zone",
         "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}},
         "minDomains": 2}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "platform.io/os", "operator": "In", "values": ["linux"]}]}]}},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {
                    "topologyKey": "platform.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "x"}}}}]}})
    assert errors(s) == []


def test_sidecar_init_container_may_have_probes() -> None:
    s = spec(initContainers=[{"name": "side", "image": "x", "restartPolicy": "Always",
                              "readinessProbe": {"tcpSocket": {"port": 1}}}])
    assert errors(s) == []


def test_pod_only_image_whitespace() -> None:
    s = spec(containers=[{"name": "c", "image": " nginx"}])
    msg = ("spec.containers[0].image",
           'Invalid value: " nginx": must not have leading or trailing whitespace')
    assert msg not in errors(copy.deepcopy(s))
    assert msg in errors(s, for_pod=True)


def test_template_restart_policies() -> None:
    tpl = {"metadata": {"labels": {"app": "x"}}, "spec": spec(restartPolicy="OnFailure")}
    default_pod_template(tpl)
    got = [(c["field"], c["message"]) for c in validate_pod_template(tpl, "spec.template")]
    assert got == [("spec.template.spec.restartPolicy",
                    'Unsupported value: "OnFailure": supported values: "Always"')]
    assert validate_pod_template(tpl, "spec.template",
                                 restart_policies=("OnFailure", "Never")) == []
    tpl["metadata"]["labels"] = {"a/b/c": "x"}
    fields = [c["field"] for c in validate_pod_template(tpl, "template",
                                                        restart_policies=("OnFailure",))]
    assert fields == ["template.labels"]
    assert [c["field"] for c in validate_pod_template(None, "spec.template")] == [
        "spec.template"]


def test_junk_shapes_do_not_crash() -> None:
    for junk in (None, [], "x", {"containers": "x", "volumes": [1, None],
                                 "initContainers": [None]}):
        validate_pod_spec(junk, "spec")
        if isinstance(junk, dict):
            default_pod_spec(copy.deepcopy(junk))
    assert podspec.port_name_errors("ab--c") == ["must not contain consecutive hyphens"]
    assert podspec.port_name_errors("") == [
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "must contain at least one letter (a-z)"]
    s = spec(containers=[{"name": "c", "image": "x", "livenessProbe": {"tcpSocket": {}}}])
    assert errors(s) == [("spec.containers[0].livenessProbe.tcpSocket.port",
                          "Invalid value: 0: must be between 1 and 65535, inclusive")]


def test_service_account_token_volume_is_valid() -> None:
    s = spec(volumes=[{"name": "platform-api-access-abcde", "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "platform-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}])
    assert errors(s) == []
    assert s["volumes"][0]["projected"]["defaultMode"] == 420
