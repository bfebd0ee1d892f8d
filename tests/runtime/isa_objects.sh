#!/usr/bin/env bash
# The ODR guard of the CPU kernels' instruction-set levels (docs/DESIGN.md, "Instruction sets"):
# in the objects of the AVX2 and AVX-512 levels, only the level's own functions (named
# ...::avx2::... / ...::avx512::..., or ptq_eigen_avx2::... for the level's Eigen, see
# src/runtime/cpu/eigen_level.h) may use the wide registers (ymm, zmm). A function outside
# those namespaces with such code (a standard or Eigen template instantiated under the level's
# target pragma) would be one of several copies the linker may pick for every caller, and
# would fault on an older CPU. Meaningful in a portable build only (-march=native allows them
# everywhere).
#   tests/runtime/isa_objects.sh OBJECT_DIR...
set -euo pipefail
status=0
for dir in "$@"; do
  objects=("$dir"/*.o)
  [ -e "${objects[0]}" ] || { echo "isa_objects: no objects in $dir" >&2; exit 1; }
  for obj in "${objects[@]}"; do
    objdump -d -C --no-show-raw-insn "$obj" | awk -v obj="$(basename "$obj")" '
      # The function'"'"'s own qualified name: after its return type, before its parameters,
      # without template arguments (a baseline template instantiated for a level'"'"'s lambda
      # names the level only there). A name objdump leaves mangled (too long for its
      # demangler) is the level'"'"'s when its outermost scope is.
      function own_name(s,    i, c, depth, angle, head) {
        gsub(/\(anonymous namespace\)/, "anon", s)
        depth = 0; angle = 0; head = ""
        for (i = 1; i <= length(s); i++) {
          c = substr(s, i, 1)
          if (c == "(" && depth == 0) break
          if (c == "<" || c == "(" || c == "{") depth++
          if (c == ">" || c == ")" || c == "}") depth--
          if (c == "<") angle++
          if (c == ">") { angle--; continue }
          if (depth == 0 && c == " ") { head = ""; continue }
          if (angle == 0) head = head c
        }
        return head
      }
      /^[0-9a-f]+ <.*>:$/ { name = substr($0, index($0, "<") + 1); sub(/>:$/, "", name)
                            own = own_name(name) ~ /(::|^ptq_eigen_)(avx2|avx512)::/ ||
                                  name ~ /^_ZZ?N3ptq7runtime3cpu(4avx2|6avx512)/; next }
      /%[yz]mm[0-9]/ && !own && !(name in seen) { seen[name] = 1; print obj ": " name; bad = 1 }
      END { exit bad }' || status=1
  done
done
[ "$status" = 0 ] && echo "isa_objects: wide registers only in the levels' own functions"
exit "$status"
