# Sourced on the GPU machine from the project's root, after `make gpu-pack`:
#   source scripts/gpu-unpack.sh
# Unpacks .gpu/*.xz (gatepipe, the test binaries, OpenBLAS and its runtime
# libraries) into $G (default /tmp/gpbin), puts them on PATH and
# LD_LIBRARY_PATH. It needs no xz: Python's lzma decompresses when xz is absent.
G=${G:-/tmp/gpbin}; mkdir -p "$G/lib"
for f in .gpu/*.xz; do
	b=$(basename "$f" .xz)
	case $b in lib*) d=$G/lib/$b ;; *) d=$G/$b ;; esac
	if command -v xz >/dev/null; then xz -dc "$f" >"$d"
	else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "$d"; fi
	case $b in lib*) ;; *) chmod +x "$d" ;; esac
done
export PATH=$G:$PATH LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gatepipe version
