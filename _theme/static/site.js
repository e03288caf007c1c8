// The book's own page behaviour (every page, _config.yml "html_js_files").
// Click to enlarge: each figure's image links to the image itself, which the browser shows at full size
// (the figures are drawn wider than the text column, so their labels are small in it).
(function () {
  "use strict";
  var LABEL = {en: "Open the figure at full size", es: "Abrir la figura a tamaño completo"};
  function enlargeable() {
    var lang = (document.documentElement.lang || "en").slice(0, 2);
    document.querySelectorAll("main figure img").forEach(function (img) {
      if (img.closest("a")) return;
      var link = document.createElement("a");
      link.href = img.getAttribute("src");
      link.className = "mgb-enlarge";
      link.title = LABEL[lang] || LABEL.en;
      img.parentNode.insertBefore(link, img);
      link.appendChild(img);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", enlargeable);
  else enlargeable();
})();
