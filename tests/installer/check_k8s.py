#!/usr/bin/env python3
"""Checks installer/k8s/dtlab.yaml without a cluster: it parses as YAML, and its Service,
StatefulSet and Job agree with each other and with what DTLab needs (a headless Service whose
port the daemons listen on, daemons advertising their stable names, the Job's hostfile naming
exactly the StatefulSet's pods, the token only ever read from a file)."""
import sys

import yaml


def fail(message):
    print(f"check_k8s: {message}", file=sys.stderr)
    sys.exit(1)


def container_text(pod_spec):
    (container,) = pod_spec["containers"]
    return container, " ".join(container.get("command", []) + container.get("args", []))


def main(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    by_kind = {d["kind"]: d for d in docs}
    if sorted(by_kind) != ["Job", "Service", "StatefulSet"]:
        fail(f"expected a Service, a StatefulSet and a Job, got {sorted(by_kind)}")
    service, nodes, job = by_kind["Service"], by_kind["StatefulSet"], by_kind["Job"]
    name = service["metadata"]["name"]
    if service["spec"].get("clusterIP") != "None":
        fail("the Service must be headless (clusterIP: None): one stable name per pod")
    (port,) = [p["port"] for p in service["spec"]["ports"]]
    if nodes["spec"]["serviceName"] != name:
        fail(f"the StatefulSet's serviceName {nodes['spec']['serviceName']} is not {name}")
    labels = nodes["spec"]["template"]["metadata"]["labels"]
    for key, value in service["spec"]["selector"].items():
        if labels.get(key) != value or nodes["spec"]["selector"]["matchLabels"].get(key) != value:
            fail(f"the Service selects {key}={value}, which the pods do not carry")
    container, text = container_text(nodes["spec"]["template"]["spec"])
    if f"--listen 0.0.0.0:{port}" not in text:
        fail(f"the daemons do not listen on the Service's port {port}: {text}")
    if [p["containerPort"] for p in container["ports"]] != [port]:
        fail("the container's port differs from the Service's")
    if f'--advertise "$POD_NAME.{name}"' not in text:
        fail("the daemons must advertise their stable names ($POD_NAME.SERVICE)")
    replicas = nodes["spec"]["replicas"]
    pod = nodes["metadata"]["name"]

    job_container, job_text = container_text(job["spec"]["template"]["spec"])
    env = {e["name"]: e.get("value") for e in job_container.get("env", [])}
    if int(env.get("NODES", -1)) != replicas:
        fail(f"the Job's NODES={env.get('NODES')} is not the StatefulSet's {replicas} replicas")
    if f"{pod}-$i.{name}:{port}" not in job_text or "--hostfile" not in job_text:
        fail("the Job must write a hostfile of the StatefulSet's stable names and use it")

    for spec in (nodes["spec"]["template"]["spec"], job["spec"]["template"]["spec"]):
        _, text = container_text(spec)
        if "--token " in text or "--token=" in text:
            fail("a token on a command line (ps shows it): use --token-file")
        if "--token-file" not in text:
            fail("every container reads the token with --token-file")
        security = spec.get("securityContext", {})
        if not security.get("runAsNonRoot"):
            fail("the pods must run as a non-root user")
    print(f"check_k8s: {path}: Service {name} (port {port}), StatefulSet {pod} x{replicas}, "
          f"Job {job['metadata']['name']}: consistent")


if __name__ == "__main__":
    main(sys.argv[1])
