#!/usr/bin/env bash
# Build the documentation site, serve it on localhost and save headless Chromium screenshots of
# the home page, an agent page, the API reference and the results page to site/screenshots/
# (git-ignored), to look at the site as a reader would. Needs .venv (scripts/bootstrap.sh) and
# Chromium (Debian: `apt-get install chromium`; CHROMIUM=/path/to/chrome picks another).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
chromium="${CHROMIUM:-chromium}"
if ! command -v "$chromium" >/dev/null; then
  echo "site_screenshots.sh: no $chromium; install it (apt-get install chromium) or set CHROMIUM." >&2
  exit 1
fi
port="${PORT:-8765}"
out="site/screenshots"

JAX_PLATFORMS=cpu NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
mkdir -p "$out"
.venv/bin/python -m http.server "$port" --bind 127.0.0.1 --directory site >/dev/null 2>&1 &
server=$!
profile="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null; rm -rf "$profile"' EXIT
for _ in $(seq 50); do
  curl --silent --fail "http://127.0.0.1:$port/" >/dev/null && break
  sleep 0.1
done

# name, then the page's path under site/ (with an optional #anchor); the first path that was built is taken.
shoot() {
  local name="$1" path="" found=""
  shift
  for candidate in "$@"; do
    if [ -e "site/${candidate%%#*}index.html" ]; then
      path="$candidate" found=1
      break
    fi
  done
  if [ -z "$found" ]; then
    echo "site_screenshots.sh: none of $* was built; no $name screenshot." >&2
    return
  fi
  local url="http://127.0.0.1:$port/$path"
  if [[ "$path" == *"#"* ]]; then
    # Headless Chromium paints nothing when a screenshot's page is scrolled to an anchor; an iframe's can be.
    printf '<!doctype html><body style="margin:0"><iframe src="/%s" style="border:0;width:100%%;height:100vh"></iframe>\n' \
      "$path" > "$out/$name.html"
    url="http://127.0.0.1:$port/screenshots/$name.html"
  fi
  "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$profile" --window-size=1280,1600 --virtual-time-budget=5000 \
    --screenshot="$out/$name.png" "$url" >/dev/null 2>&1
  echo "$out/$name.png  <- /$path"
}

shoot home ""
shoot agent agents/sac/ agents/
shoot api api/
shoot api-agents api/agents/
shoot api-sac "api/agents/#ajax.agents.SAC.SAC.SAC"
shoot cli api/cli/
shoot results results/
