#!/usr/bin/env bash
# Copy the JavaScript the site needs into _build/assets/vendor/ (served as <site>/vendor/ through
# Sphinx's html_extra_path; _build is gitignored), so that the built site
# loads nothing from a CDN: MathJax 3, RequireJS, and the Jupyter widgets HTML manager
# (which bundles @jupyter-widgets/base, controls and output: standard widgets need no CDN).
# Versions are pinned in package.json / package-lock.json and installed with `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --ignore-scripts --no-audit --no-fund
fi

dest=_build/assets/vendor
rm -rf "$dest"
mkdir -p "$dest/html-manager"
# MathJax loads its fonts and extensions relative to its own script: copy the whole es5 tree.
cp -R node_modules/mathjax/es5 "$dest/mathjax"
cp node_modules/requirejs/require.js "$dest/require.js"
# The bundle plus the font files (Font Awesome) its CSS refers to.
cp node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js "$dest/html-manager/"
cp node_modules/@jupyter-widgets/html-manager/dist/*.{woff,woff2,ttf,eot,svg} "$dest/html-manager/"
# widgets-setup.js runs before RequireJS and the widget bundle:
# - the bundle resolves its font URLs against the RequireJS URL of its own module,
#   "@jupyter-widgets/html-manager/dist/libembed-amd" (by default: relative to the page); map that
#   module folder to the vendored copy (RequireJS reads a global `require` object as its config);
# - widget labels are typeset with the MathJax 2 call MathJax.Hub.Queue; the site has MathJax 3,
#   so give it that one call, forwarded to MathJax.typesetPromise.
cat > "$dest/widgets-setup.js" <<'JS'
(function () {
  var src = document.currentScript && document.currentScript.src;
  if (src && typeof window.require !== "function") {
    var base = src.replace(/[^/]*$/, "") + "html-manager";
    window.require = {paths: {"@jupyter-widgets/html-manager/dist": base}};
    window.__jupyter_widgets_assets_path__ = base + "/";
  }
  document.addEventListener("DOMContentLoaded", function () {
    var MJ = window.MathJax;
    if (MJ && !MJ.Hub && MJ.typesetPromise) {
      MJ.Hub = {Queue: function (job) {
        var el = job && job[2];
        MJ.typesetPromise(el ? [el] : undefined).catch(function (err) { console.error(err); });
      }};
    }
  });
})();
JS
touch _build/.assets.stamp
echo "vendored: $(du -sh "$dest" | cut -f1) in $dest"
