#!/usr/bin/env bash
# Re-vendor uPlot from the npm registry into the app's static files (run by hand, never by CI):
#   scripts/vendor-uplot.sh 1.6.32
# npm checks the tarball against the registry's integrity hash; the README records both.
set -euo pipefail
version="${1:?usage: $0 <uplot version, e.g. 1.6.32>}"
root="$(cd "$(dirname "$0")/.." && pwd)"
target="$root/django_redis_metrics/static/django_redis_metrics/vendor/uplot"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "uplot@$version" >/dev/null
tar xzf "uplot-$version.tgz"
integrity="$(npm view "uplot@$version" dist.integrity)"
mkdir -p "$target"
cp package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE "$target/"
cat >"$target/README.md" <<README
uPlot $version (MIT, see LICENSE), from the npm registry: \`npm pack uplot@$version\`
(https://registry.npmjs.org/uplot/-/uplot-$version.tgz, integrity $integrity).
Files copied unchanged from the package: dist/uPlot.iife.min.js, dist/uPlot.min.css, LICENSE.
Re-vendor with scripts/vendor-uplot.sh <version>; no CDN is used.
README
echo "uPlot $version vendored into $target"
