#!/usr/bin/env bash
# Builds the .deb with CPack, checks its contents and declared dependencies, installs it (dpkg -i
# when running as root and no hearth package is installed yet; otherwise unpacks it), and runs the
# installed programs: hearth-cli --version, hearth-server --help, and a live hearth-server on a
# free loopback port answering /health and /v1/models.
# Usage: test_package.sh BUILD_DIR VERSION
set -euo pipefail
build=$1
version=$2
work=$(mktemp -d)
installed=0
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  if [[ $installed == 1 ]]; then dpkg -r hearth >/dev/null 2>&1 || echo "warning: dpkg -r hearth failed"; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

cd "$build"
if ! cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"; fail "cpack -G DEB failed"
fi
deb=$(ls "$work"/out/hearth_*.deb 2>/dev/null | head -1)
[[ -f $deb ]] || fail "no .deb produced in $work/out"
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1))"

info=$(dpkg-deb -I "$deb")
grep -q "^ Version: $version" <<<"$info" || fail "package version is not $version"
depends=$(sed -n 's/^ Depends: //p' <<<"$info")
echo "depends: $depends"
for need in libc6 libstdc++6 libspdlog1.10 libcpp-httplib0.11; do
  grep -q "$need" <<<"$depends" || fail "Depends lacks $need"
done
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/hearth-cli ./usr/bin/hearth-server ./usr/lib/systemd/user/hearth-server.service; do
  grep -q " $path\$" <<<"$contents" || fail "package lacks $path"
done
if [[ -x $build/bin/hearth ]]; then
  for path in ./usr/bin/hearth ./usr/share/applications/hearth.desktop \
              ./usr/share/icons/hicolor/scalable/apps/hearth.svg; do
    grep -q " $path\$" <<<"$contents" || fail "package lacks $path"
  done
  for need in libqt6widgets6 libqt6sql6-sqlite qt6-qpa-plugins; do
    grep -q "$need" <<<"$depends" || fail "Depends lacks $need"
  done
fi

root=
if [[ $(id -u) == 0 ]] && ! dpkg -s hearth >/dev/null 2>&1 && [[ -z ${HEARTH_TEST_NO_INSTALL:-} ]]; then
  dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i failed (unmet dependencies?)"; }
  installed=1
  echo "installed with dpkg -i"
else
  dpkg-deb -x "$deb" "$work/root"
  root=$work/root
  echo "unpacked into $root (not root, or a hearth package is already installed)"
fi

for prog in hearth-cli hearth-server hearth; do
  [[ -e $root/usr/bin/$prog ]] || continue
  if ldd "$root/usr/bin/$prog" | grep -q "not found"; then
    ldd "$root/usr/bin/$prog" | grep "not found"; fail "$prog has unresolved libraries"
  fi
done
out=$("$root/usr/bin/hearth-cli" --version) || fail "hearth-cli --version failed"
[[ $out == "hearth-cli $version" ]] || fail "hearth-cli --version printed '$out'"
# Read whole before matching: `grep -q` leaving early would cut the pipe under a help text longer
# than one stdio buffer (4 KiB), and with pipefail the server's SIGPIPE would fail the check.
help=$("$root/usr/bin/hearth-server" --help) || fail "hearth-server --help exited with $?"
grep -q "^usage: hearth-server" <<<"$help" || fail "hearth-server --help"

unit=$root/usr/lib/systemd/user/hearth-server.service
grep -q "^ExecStart=/usr/bin/hearth-server " "$unit" || fail "unit's ExecStart"
if command -v systemd-analyze >/dev/null && [[ -z $root ]]; then
  systemd-analyze verify --user "$unit" 2>&1 | grep -v -i -E "dbus|bus|runtime" || true
fi
if [[ -n $root ]] || command -v desktop-file-validate >/dev/null; then :; fi
if command -v desktop-file-validate >/dev/null && [[ -f $root/usr/share/applications/hearth.desktop ]]; then
  desktop-file-validate "$root/usr/share/applications/hearth.desktop" || fail "desktop entry invalid"
fi

# The installed server starts and answers.
mkdir -p "$work/models"
"$root/usr/bin/hearth-server" --models-dir "$work/models" --port 0 >"$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/server.log" | head -1)
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n $port ]] || { cat "$work/server.log"; fail "installed hearth-server did not start"; }
models=$(curl -s --max-time 10 "http://127.0.0.1:$port/v1/models") || fail "GET /v1/models"
grep -q '"object" *: *"list"' <<<"$models" || fail "GET /v1/models answered '$models'"
echo "installed hearth-server answered on port $port: $models"
echo "PASS"
