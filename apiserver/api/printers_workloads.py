"""Printers of the workload kinds: pods, pod templates, deployments, replica sets,
replication controllers, daemon sets, stateful sets, jobs, cron jobs, controller revisions
(upstream printPod, printDeployment, printJob, ...)."""

from __future__ import annotations

from typing import Any, Final

from apiserver.api.printers_common import (
    CONTAINERS,
    IMAGES,
    Object,
    as_int,
    as_list,
    as_map,
    as_str,
    col,
    container_cells,
    deleting,
    format_labels,
    obj_name,
    selector_col,
    selector_string,
    template_spec,
)
from apiserver.registry import tables

# ---- pods -------------------------------------------------------------------------------------

POD_COLUMNS: Final = (
    tables.NAME,
    col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "The aggregate status of the containers in this pod."),
    col("Restarts", "The number of times the containers in this pod have been restarted and "
         "when the last container in this pod has restarted."),
    tables.AGE,
    col("IP", "podIP address allocated to the pod. Routable at least within the cluster. "
         "Empty if not yet allocated.", priority=1),
    col("Node", "NodeName indicates in which node this pod is scheduled.", priority=1),
    col("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods "
         "on the node, but it cannot be scheduled right away as preemption victims receive "
         "their graceful termination periods.", priority=1),
    col("Readiness Gates", "If specified, all readiness gates will be evaluated for pod "
         "readiness.", priority=1),
)


def _restartable(container: Any) -> bool:
    return as_map(container).get("restartPolicy") == "Always"


def _condition_true(conditions: Any, ctype: str) -> bool:
    return any(as_map(c).get("type") == ctype and as_map(c).get("status") == "True"
               for c in as_list(conditions))


def _later(current: str, candidate: Any) -> str:
    """The later of two RFC 3339 times (strings of one format compare as times)."""
    c = as_str(candidate)
    return c if c and (not current or c > current) else current


def pod_cells(obj: Object) -> list[Any]:
    """Upstream printPod."""
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    containers = as_list(spec.get("containers"))
    init_specs = {as_str(as_map(c).get("name")): as_map(c)
                  for c in as_list(spec.get("initContainers"))}
    total = len(containers) + sum(1 for c in init_specs.values() if _restartable(c))
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart = ""
    last_sidecar_restart = ""
    phase = as_str(st.get("phase"))
    reason = as_str(st.get("reason")) or phase
    for cond in as_list(st.get("conditions")):
        c = as_map(cond)
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_statuses = as_list(st.get("initContainerStatuses"))
    initializing = False
    for i, raw in enumerate(init_statuses):
        cs = as_map(raw)
        count = as_int(cs.get("restartCount"))
        restarts += count
        finished = as_map(as_map(cs.get("lastState")).get("terminated")).get("finishedAt")
        last_restart = _later(last_restart, finished)
        sidecar = _restartable(init_specs.get(as_str(cs.get("name"))))
        if sidecar:
            sidecar_restarts += count
            last_sidecar_restart = _later(last_sidecar_restart, finished)
        state = as_map(cs.get("state"))
        term, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(term, dict) and as_int(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(term, dict):
            if not as_str(term.get("reason")):
                signal = as_int(term.get("signal"))
                reason = (f"Init:Signal:{signal}" if signal
                          else f"Init:ExitCode:{as_int(term.get('exitCode'))}")
            else:
                reason = "Init:" + as_str(term.get("reason"))
        elif (isinstance(waiting, dict) and as_str(waiting.get("reason"))
              and waiting.get("reason") != "PodInitializing"):
            reason = "Init:" + as_str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(st.get("conditions"), "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for raw in reversed(as_list(st.get("containerStatuses"))):
            cs = as_map(raw)
            restarts += as_int(cs.get("restartCount"))
            finished = as_map(as_map(cs.get("lastState")).get("terminated")).get("finishedAt")
            last_restart = _later(last_restart, finished)
            state = as_map(cs.get("state"))
            waiting, term = state.get("waiting"), state.get("terminated")
            if isinstance(waiting, dict) and as_str(waiting.get("reason")):
                reason = as_str(waiting.get("reason"))
            elif isinstance(term, dict) and as_str(term.get("reason")):
                reason = as_str(term.get("reason"))
            elif isinstance(term, dict):
                signal = as_int(term.get("signal"))
                code = as_int(term.get("exitCode"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{code}"
            elif cs.get("ready") is True and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(st.get("conditions"), "Ready") else "NotReady"

    if deleting(obj) and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting(obj) and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({tables.since(last_restart)} ago)"

    ips = as_list(st.get("podIPs"))
    pod_ip = as_str(as_map(ips[0]).get("ip")) if ips else ""
    gates = as_list(spec.get("readinessGates"))
    gates_text = "<none>"
    if gates:
        true = 0
        for gate in gates:
            ctype = as_map(gate).get("conditionType")
            for cond in as_list(st.get("conditions")):
                if as_map(cond).get("type") == ctype:
                    true += as_map(cond).get("status") == "True"
                    break
        gates_text = f"{true}/{len(gates)}"
    return [obj_name(obj), f"{ready}/{total}", reason, restarts_text, tables.age(obj),
            pod_ip or "<none>", as_str(spec.get("nodeName")) or "<none>",
            as_str(st.get("nominatedNodeName")) or "<none>", gates_text]


POD_TEMPLATE_COLUMNS: Final = (
    tables.NAME,
    col("Containers", "Names of each container in the template."),
    col("Images", "Images referenced by each container in the template."),
    col("Pod Labels", "The labels for the pod template."),
)


def pod_template_cells(obj: Object) -> list[Any]:
    tpl = as_map(obj.get("template"))
    return [obj_name(obj), *container_cells(tpl.get("spec")),
            format_labels(as_map(tpl.get("metadata")).get("labels"))]


# ---- workloads --------------------------------------------------------------------------------

DEPLOYMENT_COLUMNS: Final = (
    tables.NAME,
    col("Ready", "Number of the pod with ready state"),
    col("Up-to-date", "Total number of non-terminated pods targeted by this deployment that "
         "have the desired template spec."),
    col("Available", "Total number of available pods (ready for at least minReadySeconds) "
         "targeted by this deployment."),
    tables.AGE, CONTAINERS, IMAGES,
    selector_col("Label selector for pods. Existing ReplicaSets whose pods are selected by "
                  "this will be the ones affected by this deployment."),
)


def deployment_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    return [obj_name(obj), f"{as_int(st.get('readyReplicas'))}/{as_int(spec.get('replicas'))}",
            as_int(st.get("updatedReplicas")), as_int(st.get("availableReplicas")), tables.age(obj),
            *container_cells(template_spec(obj)), selector_string(spec.get("selector"))]


# autoscaling/v1 Scale, as the /scale sub-resources print it (upstream's
# scaleColumnDefinitions / printScale)
SCALE_COLUMNS: Final = (
    tables.NAME,
    col("Desired", "Number of desired replicas", "integer"),
    col("Available", "Number of actual replicas", "integer"),
    tables.AGE,
)


def scale_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    return [obj_name(obj), as_int(spec.get("replicas")), as_int(st.get("replicas")),
            tables.age(obj)]


REPLICA_SET_COLUMNS: Final = (
    tables.NAME,
    col("Desired", "Replicas is the number of desired pods.", "integer"),
    col("Current", "Replicas is the most recently observed number of replicas.", "integer"),
    col("Ready", "The number of ready replicas for this replica set.", "integer"),
    tables.AGE, CONTAINERS, IMAGES, selector_col(),
)


def replica_set_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    return [obj_name(obj), as_int(spec.get("replicas")), as_int(st.get("replicas")),
            as_int(st.get("readyReplicas")), tables.age(obj),
            *container_cells(template_spec(obj)), selector_string(spec.get("selector"))]


def replication_controller_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    return [obj_name(obj), as_int(spec.get("replicas")), as_int(st.get("replicas")),
            as_int(st.get("readyReplicas")), tables.age(obj),
            *container_cells(template_spec(obj)), format_labels(spec.get("selector"))]


DAEMON_SET_COLUMNS: Final = (
    tables.NAME,
    col("Desired", "The total number of nodes that should be running the daemon pod.",
         "integer"),
    col("Current", "The number of nodes that are running at least 1 daemon pod and are "
         "supposed to run the daemon pod.", "integer"),
    col("Ready", "The number of nodes that should be running the daemon pod and have one or "
         "more of the daemon pod running and ready.", "integer"),
    col("Up-to-date", "The total number of nodes that are running updated daemon pod",
         "integer"),
    col("Available", "The number of nodes that should be running the daemon pod and have "
         "one or more of the daemon pod running and available.", "integer"),
    col("Node Selector", "NodeSelector is a selector which must be true for the pod to fit "
         "on a node."),
    tables.AGE, CONTAINERS, IMAGES,
    selector_col("A label query over pods that are managed by the daemon set."),
)


def daemon_set_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    tpl = as_map(template_spec(obj))
    return [obj_name(obj), as_int(st.get("desiredNumberScheduled")),
            as_int(st.get("currentNumberScheduled")), as_int(st.get("numberReady")),
            as_int(st.get("updatedNumberScheduled")), as_int(st.get("numberAvailable")),
            format_labels(tpl.get("nodeSelector")), tables.age(obj), *container_cells(tpl),
            selector_string(spec.get("selector"))]


STATEFUL_SET_COLUMNS: Final = (
    tables.NAME, col("Ready", "Number of the pod with ready state"), tables.AGE,
    CONTAINERS, IMAGES,
)


def stateful_set_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    return [obj_name(obj), f"{as_int(st.get('readyReplicas'))}/{as_int(spec.get('replicas'))}",
            tables.age(obj), *container_cells(template_spec(obj))]


JOB_COLUMNS: Final = (
    tables.NAME,
    col("Status", "Status of the job."),
    col("Completions", "The number of pods which reached phase Succeeded."),
    col("Duration", "Time required to complete the job."),
    tables.AGE, CONTAINERS, IMAGES,
    selector_col("A label query over pods that should match the pod count."),
)

# Job conditions in the order upstream's printer looks for them (after Complete and Failed,
# a job being deleted reads Terminating).
_JOB_CONDITIONS: Final = ("Suspended", "FailureTarget", "SuccessCriteriaMet")


def job_cells(obj: Object) -> list[Any]:
    """Upstream printJob."""
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    succeeded = as_int(st.get("succeeded"))
    if isinstance(spec.get("completions"), int):
        completions = f"{succeeded}/{spec['completions']}"
    else:
        parallelism = as_int(spec.get("parallelism"))
        completions = (f"{succeeded}/1 of {parallelism}" if parallelism > 1
                       else f"{succeeded}/1")
    start, done = st.get("startTime"), st.get("completionTime")
    duration = ""
    if start and not done:
        duration = tables.since(start)
    elif start and done:
        a, b = tables.parse_time(start), tables.parse_time(done)
        if a is not None and b is not None:
            duration = tables.human_duration((b - a).total_seconds())
    conds = st.get("conditions")
    if _condition_true(conds, "Complete"):
        status = "Complete"
    elif _condition_true(conds, "Failed"):
        status = "Failed"
    elif deleting(obj):
        status = "Terminating"
    else:
        status = next((c for c in _JOB_CONDITIONS if _condition_true(conds, c)), "Running")
    return [obj_name(obj), status, completions, duration, tables.age(obj),
            *container_cells(template_spec(obj)), selector_string(spec.get("selector"))]


CRON_JOB_COLUMNS: Final = (
    tables.NAME,
    col("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col("Timezone", "The time zone name for the given schedule, see "
         "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
    col("Suspend", "This flag tells the controller to suspend subsequent executions, it does "
         "not apply to already started executions.", "boolean"),
    col("Active", "A list of pointers to currently running jobs.", "integer"),
    col("Last Schedule", "Information when was the last time the job was successfully "
         "scheduled."),
    tables.AGE, CONTAINERS, IMAGES,
    selector_col("A label query over pods that should match the pod count."),
)


def _bool_ptr(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def cron_job_cells(obj: Object) -> list[Any]:
    spec, st = as_map(obj.get("spec")), as_map(obj.get("status"))
    job_spec = as_map(as_map(spec.get("jobTemplate")).get("spec"))
    last = st.get("lastScheduleTime")
    tz = spec.get("timeZone")
    return [obj_name(obj), as_str(spec.get("schedule")), tz if isinstance(tz, str) else "<none>",
            _bool_ptr(spec.get("suspend")), len(as_list(st.get("active"))),
            tables.since(last) if last else "<none>", tables.age(obj),
            *container_cells(as_map(job_spec.get("template")).get("spec")),
            selector_string(job_spec.get("selector"))]


CONTROLLER_REVISION_COLUMNS: Final = (
    tables.NAME,
    col("Controller", "Controller of the object"),
    col("Revision", "Revision indicates the revision of the state represented by Data.",
         "integer"),
    tables.AGE,
)


def controller_revision_cells(obj: Object) -> list[Any]:
    controller = "<none>"
    for ref in as_list(tables.meta(obj).get("ownerReferences")):
        r = as_map(ref)
        if r.get("controller") is True:
            api_version = as_str(r.get("apiVersion"))
            group = api_version.split("/")[0] if "/" in api_version else ""
            kind = as_str(r.get("kind")).lower()
            resource = f"{kind}.{group}" if group else kind
            controller = f"{resource}/{as_str(r.get('name'))}"
            break
    return [obj_name(obj), controller, as_int(obj.get("revision")), tables.age(obj)]


