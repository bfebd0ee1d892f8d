#!/usr/bin/env bash
# Brings Debian's Open MPI runtime to a machine that lacks it (the GPU machine), as the Vulkan
# loader is brought (/work/.library/device/README.md): run HERE, where apt works, then carry
# the folder (default .mpi/, git-ignored) and `source bench/openmpi_env.sh` there.
#   bench/fetch_openmpi.sh [DIR]
# The packages: openmpi-bin (mpirun, orted), libopenmpi3 and openmpi-common (its help and
# parameter files), and the runtime libraries they need that a bare Debian/Ubuntu GPU machine
# lacks, from `apt-cache depends --recurse openmpi-bin libopenmpi3` less what such a machine
# has (libc6, libstdc++6, libgcc-s1, zlib1g, libudev1, libuuid1, adduser, ...). Left out on
# purpose: libhwloc-plugins (optional topology plugins; they pull libxml2, ICU, X11 and
# OpenCL, ~12 MB) and openssh-client (mpirun needs ssh only for other hosts).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/.mpi}"
packages=(openmpi-bin libopenmpi3 openmpi-common libpmix2 libevent-core-2.1-7
          libevent-pthreads-2.1-7 libhwloc15 libfabric1 libucx0 libibverbs1 ibverbs-providers
          librdmacm1 libnl-3-200 libnl-route-3-200 libnuma1 libpsm2-2 libpsm-infinipath1
          libmunge2 libatomic1)
limit_mb=40

# Every package the two depend on, walked from them without entering a bare machine's own,
# must be in the list: a new Debian release that adds one fails here, not on the GPU machine.
bare=" libc6 libstdc++6 libgcc-s1 gcc-12-base zlib1g libudev1 libuuid1 adduser debconf
       libhwloc-plugins openssh-client ssh-client "
depends() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$1" 2>/dev/null | awk '/^  *(Pre)?Depends:/ {print $2}' | tr -d '<>'
}
seen=" " todo="openmpi-bin libopenmpi3" missing=""
while [ -n "$todo" ]; do
  next=""
  for pkg in $todo; do
    case "$seen" in *" $pkg "*) continue ;; esac
    seen="$seen$pkg "
    case "$bare" in *" $pkg "*) continue ;; esac
    case " ${packages[*]} " in
      *" $pkg "*) next="$next $(depends "$pkg" | tr '\n' ' ')" ;;
      *) missing="$missing $pkg" ;;
    esac
  done
  todo="$next"
done
if [ -n "$missing" ]; then
  echo "fetch_openmpi: dependencies neither listed nor on a bare machine:$missing" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}" >/dev/null)
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$work"/*.deb; do dpkg -x "$deb" "$dir"; done
rm -rf "$dir/usr/share/doc" "$dir/usr/share/man" "$dir/usr/share/lintian"
# Debian's mpirun is an alternatives link (/etc/alternatives/mpirun): point it at orterun here.
ln -sf orterun "$dir/usr/bin/mpirun"
size_mb=$(du -sm "$dir" | cut -f1)
echo "fetch_openmpi: $dir holds ${#packages[@]} packages, $size_mb MB"
if [ "$size_mb" -gt "$limit_mb" ]; then
  echo "fetch_openmpi: over $limit_mb MB" >&2
  exit 1
fi
