#!/bin/sh
# Empty the NVMe-oF target's configfs tree, as a reboot leaves it (the scenario then replays it at boot).
set -eu
cd /sys/kernel/config/nvmet
for link in ports/*/subsystems/* subsystems/*/allowed_hosts/*; do [ -L "$link" ] && rm "$link"; done
for ns in subsystems/*/namespaces/*; do [ -d "$ns" ] && echo 0 > "$ns/enable" && rmdir "$ns"; done
for dir in subsystems/* ports/* hosts/*; do [ -d "$dir" ] && rmdir "$dir"; done
echo cleared
