# Sourced: `source bench/openmpi_env.sh [DIR]` makes the Open MPI unpacked by
# bench/fetch_openmpi.sh into DIR (default .mpi/ at the repository root) the one on PATH.
# OPAL_PREFIX relocates Open MPI's compiled-in /usr (its components, help files and orted);
# PMIx is relocated the same way. Transports are limited to shared memory and TCP: the
# InfiniBand and UCX components would probe for hardware and warn where there is none.
_ompi_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_ompi_dir="$(cd "${1:-$_ompi_root/.mpi}" && pwd)"
_ompi_lib="$_ompi_dir/usr/lib/x86_64-linux-gnu"
export PATH="$_ompi_dir/usr/bin:$PATH"
export LD_LIBRARY_PATH="$_ompi_lib:$_ompi_lib/openmpi/lib:$_ompi_lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$_ompi_dir/usr"
export OPAL_SYSCONFDIR="$_ompi_dir/etc/openmpi"
export PMIX_INSTALL_PREFIX="$_ompi_lib/pmix2"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mtl='^ofi,psm,psm2' OMPI_MCA_osc='^ucx'
unset _ompi_root _ompi_dir _ompi_lib
