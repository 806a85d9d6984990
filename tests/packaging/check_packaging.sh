#!/usr/bin/env bash
# Packaging: `cmake --install` lays out the programs, the shipped data, the desktop
# entry, the icon and the AppStream metadata; the installed CLI trains from the
# installed data; the desktop entry and metadata validate; CPack builds a .deb holding
# all of it with its library dependencies.
#   check_packaging.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR="$work/root" cmake --install "$build" --prefix /usr >/dev/null
root="$work/root/usr"
for f in bin/ddpscope bin/ddpscope-cli bin/ddpscope-worker bin/ddpscope-collector \
         share/ddpscope/data/corpus.txt share/applications/ddpscope.desktop \
         share/ddpscope/lessons/seed-fast.ddprun \
         share/icons/hicolor/scalable/apps/ddpscope.svg \
         share/metainfo/io.github.ddpscope.ddpscope.metainfo.xml; do
  [ -f "$root/$f" ] || fail "cmake --install did not install $f"
done
desktop-file-validate "$root/share/applications/ddpscope.desktop" \
  || fail "the desktop entry does not validate"
appstreamcli validate --no-net "$root/share/metainfo/io.github.ddpscope.ddpscope.metainfo.xml" \
  >/dev/null || fail "the AppStream metadata does not validate"

# The installed CLI trains from the installed corpus.
out=$(DDPSCOPE_DATA_DIR="$root/share/ddpscope/data" "$root/bin/ddpscope-cli" train \
      --model transformer --iters 2 --batch 4 --width 16 --depth 1 --no-probes 2>&1) \
  || fail "the installed ddpscope-cli cannot train: $out"
grep -q "done: 2 iterations" <<<"$out" || fail "unexpected output: $out"

(cd "$build" && cpack -G DEB -B "$work/deb" >/dev/null) || fail "cpack -G DEB failed"
deb=$(ls "$work"/deb/ddpscope_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "cpack made no .deb"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/ddpscope ./usr/bin/ddpscope-cli ./usr/share/applications/ddpscope.desktop \
         ./usr/share/icons/hicolor/scalable/apps/ddpscope.svg \
         ./usr/share/metainfo/io.github.ddpscope.ddpscope.metainfo.xml; do
  grep -q " $f\$" <<<"$contents" || fail "the .deb lacks $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
for d in openmpi-bin libqt6widgets6 libsqlite3-0 libgvc6; do
  grep -q "$d" <<<"$depends" || fail "the .deb does not depend on $d: $depends"
done
echo "packaging ok: $(basename "$deb"), $(wc -l <<<"$contents") entries"
