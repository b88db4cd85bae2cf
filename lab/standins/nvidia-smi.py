# LAB STAND-IN for nvidia-smi. NOT NVIDIA's tool.
#
# Installed only on the simulated Sparks of the lab (lab/sparklab.py), which
# have no GPU. It prints the formats a real DGX Spark (GB10, unified memory)
# prints -- see shared/REAL-WORLD.md: memory columns "Not Supported" / "[N/A]",
# the process table and --query-compute-apps still work -- with numbers taken
# from real lab state: every process whose environment carries
# SPARKOPS_LAB_GPU_MIB=<MiB> is reported as a GPU process holding that much.
# Stopping such a process (or its container) really frees that "GPU memory".
# Supported: (no args), -L, -q [-x], --query-gpu=..., --query-compute-apps=...,
# --format=csv[,noheader][,nounits]. Anything else exits 2 like a usage error.
import hashlib
import os
import socket
import sys
import time

MARKER = b"SPARKOPS_LAB_GPU_MIB="
DRIVER = "580.126.09"
CUDA = "13.0"
NAME = "NVIDIA GB10"
BUS_ID = "0000000F:01:00.0"


def gpu_uuid():
    h = hashlib.sha256(("sparkops-lab-" + socket.gethostname()).encode()).hexdigest()
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:32])


def gpu_processes():
    """Processes carrying the marker. A marked process whose child carries the marker too
    (an init such as docker-init/tini started with the container's environment) is left
    out: the child is the one that holds the memory, as real nvidia-smi would list it."""
    procs, parents = [], set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as f:
                env = f.read().split(b"\0")
            with open("/proc/%s/comm" % entry) as f:
                comm = f.read().strip()
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        for item in env:
            if item.startswith(MARKER):
                try:
                    mib = int(item[len(MARKER):])
                except ValueError:
                    break
                procs.append({"pid": int(entry), "name": comm, "mib": mib, "ppid": ppid})
                break
    parents = set(p["ppid"] for p in procs)
    return sorted((p for p in procs if p["pid"] not in parents), key=lambda p: p["pid"])


def field_value(field, procs, units):
    uuid = gpu_uuid()
    mib = " MiB" if units else ""
    values = {
        "index": "0",
        "uuid": uuid,
        "gpu_uuid": uuid,
        "name": NAME,
        "gpu_name": NAME,
        "driver_version": DRIVER,
        "pci.bus_id": BUS_ID,
        "gpu_bus_id": BUS_ID,
        "memory.total": "[N/A]",
        "memory.used": "[N/A]",
        "memory.free": "[N/A]",
        "utilization.gpu": "0 %" if units else "0",
        "compute_cap": "12.1",
        "temperature.gpu": "41",
        "power.draw": "4.00 W" if units else "4.00",
    }
    if field not in values:
        raise KeyError(field)
    return values[field]


def app_value(field, proc, units):
    if field in ("pid",):
        return str(proc["pid"])
    if field in ("process_name", "name"):
        return proc["name"]
    if field in ("used_memory", "used_gpu_memory"):
        return "%d MiB" % proc["mib"] if units else str(proc["mib"])
    return field_value(field, [], units)


def csv_header(fields, units, apps):
    unit_of = {"memory.total": " [MiB]", "memory.used": " [MiB]", "memory.free": " [MiB]",
               "utilization.gpu": " [%]", "used_memory": " [MiB]", "used_gpu_memory": " [MiB]",
               "power.draw": " [W]"}
    names = []
    for f in fields:
        shown = "used_gpu_memory" if (apps and f == "used_memory") else f
        names.append(shown + (unit_of.get(f, "") if units else ""))
    return ", ".join(names)


def query(kind, spec, fmt):
    fields = [f.strip() for f in spec.split(",") if f.strip()]
    opts = fmt.split(",")
    if "csv" not in opts:
        sys.stderr.write('Format "%s" is not supported by the lab stand-in.\n' % fmt)
        return 2
    units = "nounits" not in opts
    procs = gpu_processes()
    try:
        rows = []
        if kind == "gpu":
            rows.append(", ".join(field_value(f, procs, units) for f in fields))
        else:
            for p in procs:
                rows.append(", ".join(app_value(f, p, units) for f in fields))
    except KeyError as exc:
        sys.stdout.write('Field "%s" is not a valid field to query.\n\n' % exc.args[0])
        return 2
    if "noheader" not in opts:
        print(csv_header(fields, units, kind == "apps"))
    for r in rows:
        print(r)
    return 0


def table():
    procs = gpu_processes()
    print(time.strftime("%a %b %d %H:%M:%S %Y") + "       ")
    rule = "+-----------------------------------------------------------------------------------------+"
    mid = "+-----------------------------------------+------------------------+----------------------+"
    print(rule)
    print("| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-9s|" % (DRIVER, DRIVER, CUDA))
    print(mid)
    print("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |")
    print("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |")
    print("|                                         |                        |               MIG M. |")
    print("|=========================================+========================+======================|")
    print("|   0  NVIDIA GB10                    On  |   %s Off |                  N/A |" % BUS_ID)
    print("| N/A   41C    P8              4W /  N/A  | Not Supported          |      0%      Default |")
    print("|                                         |                        |                  N/A |")
    print(mid)
    print("")
    print(rule)
    print("| Processes:                                                                              |")
    print("|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |")
    print("|        ID   ID                                                               Usage      |")
    print("|=========================================================================================|")
    if not procs:
        print("|  No running processes found                                                             |")
    for p in procs:
        print("|    0   N/A  N/A  %15d      C   %-33s %9sMiB |" % (p["pid"], p["name"][:33], p["mib"]))
    print(rule)
    return 0


def xml():
    procs = gpu_processes()
    out = ['<?xml version="1.0" ?>',
           '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">',
           "<nvidia_smi_log>",
           "\t<timestamp>%s</timestamp>" % time.strftime("%a %b %d %H:%M:%S %Y"),
           "\t<driver_version>%s</driver_version>" % DRIVER,
           "\t<cuda_version>%s</cuda_version>" % CUDA,
           "\t<attached_gpus>1</attached_gpus>",
           '\t<gpu id="%s">' % BUS_ID,
           "\t\t<product_name>%s</product_name>" % NAME,
           "\t\t<product_brand>NVIDIA</product_brand>",
           "\t\t<product_architecture>Blackwell</product_architecture>",
           "\t\t<persistence_mode>Enabled</persistence_mode>",
           "\t\t<uuid>%s</uuid>" % gpu_uuid(),
           "\t\t<minor_number>0</minor_number>",
           "\t\t<fb_memory_usage>",
           "\t\t\t<total>N/A</total>",
           "\t\t\t<reserved>N/A</reserved>",
           "\t\t\t<used>N/A</used>",
           "\t\t\t<free>N/A</free>",
           "\t\t</fb_memory_usage>",
           "\t\t<utilization>",
           "\t\t\t<gpu_util>0 %</gpu_util>",
           "\t\t\t<memory_util>N/A</memory_util>",
           "\t\t</utilization>",
           "\t\t<processes>"]
    for p in procs:
        out += ["\t\t\t<process_info>",
                "\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>",
                "\t\t\t\t<compute_instance_id>N/A</compute_instance_id>",
                "\t\t\t\t<pid>%d</pid>" % p["pid"],
                "\t\t\t\t<type>C</type>",
                "\t\t\t\t<process_name>%s</process_name>" % p["name"],
                "\t\t\t\t<used_memory>%d MiB</used_memory>" % p["mib"],
                "\t\t\t</process_info>"]
    out += ["\t\t</processes>", "\t</gpu>", "</nvidia_smi_log>"]
    print("\n".join(out))
    return 0


def main(argv):
    if not argv:
        return table()
    if argv == ["-L"]:
        print("GPU 0: %s (UUID: %s)" % (NAME, gpu_uuid()))
        return 0
    if argv[0] == "-q":
        if argv[1:] == ["-x"]:
            return xml()
        sys.stderr.write("lab stand-in: only 'nvidia-smi -q -x' is provided\n")
        return 2
    opts = dict(a.split("=", 1) for a in argv if "=" in a)
    fmt = opts.get("--format", "")
    if "--query-gpu" in opts:
        return query("gpu", opts["--query-gpu"], fmt)
    if "--query-compute-apps" in opts:
        return query("apps", opts["--query-compute-apps"], fmt)
    sys.stderr.write("lab stand-in nvidia-smi: unsupported arguments: %s\n" % " ".join(argv))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
