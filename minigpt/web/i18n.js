// MiniGPTI18N: the edition's strings, for the explorers (explorer.js) and MiniGPT live (minigpt_live.js).
// On the Spanish site every page's head sets globalThis.MiniGPTStrings = {lang, strings}: English -> the
// edition's string, from locales/<lang>/ui.yml (minigpt.book.sphinx_editions.add_ui_strings). On English
// pages it is undefined, and every function here returns its English input as it is (tr fills its {0}, ...).
// NUMBER and localizeNumbers are the twins of minigpt.book.editions.NUMBER and localize_numbers (Python's
// Unicode \w and \d written \p{L}\p{N}_ and \p{Nd}); tests/test_ui_strings.py checks both on the same
// cases, and that every string passed through the table has an entry in locales/es/ui.yml.
// The site loads this file on every page before explorer.js (_config.yml, html_js_files), and MiniGPT live's
// page before minigpt_live.js (chapters/01_minigpt_live.md; minigpt.book.web_export copies it). In a kernel
// the explorers run without it, in English.
(function (root) {
  "use strict";
  if (root.MiniGPTI18N) return;

  // Made when first needed, so that an English page never compiles it (a browser without lookbehind or
  // \p{...} in regular expressions still runs the English explorers).
  let NUMBER = null;
  function number() {
    const W = "\\p{L}\\p{N}_";
    return NUMBER || (NUMBER = new RegExp("(?<![" + W + ".,])([-−+]?)(\\p{Nd}{1,3}(?:,\\p{Nd}{3})+|\\p{Nd}+)" +
      "(?:\\.(\\p{Nd}+))?(e[-+]?\\p{Nd}+)?(?![" + W + "]|[.,]\\p{Nd})", "gu"));
  }
  const THIN = "\u202f";  // narrow no-break space: the Spanish thousands separator, from five digits on
  const own = (o, k) => !!o && Object.prototype.hasOwnProperty.call(o, k);

  function edition() {
    const s = root.MiniGPTStrings;
    return s && s.lang && s.lang !== "en" ? s : null;
  }
  function lang() {
    const e = edition();
    return e ? e.lang : "en";
  }
  function spanish(sign, whole, frac, exp) {
    const digits = Array.from(whole.replace(/,/g, ""));
    let out = digits.join("");
    if (digits.length >= 5) {
      const head = digits.length % 3 || 3;
      out = digits.slice(0, head).join("");
      for (let i = head; i < digits.length; i += 3) out += THIN + digits.slice(i, i + 3).join("");
    }
    return sign + out + (frac === undefined ? "" : "," + frac) + (exp || "");
  }
  // Every number of a string written the edition's way ("32,768" -> "32 768", "3.95" -> "3,95").
  // "1,5%" -> "1,5 %" with a no-break space, as the Spanish edition writes a percentage: the twin of
  // minigpt.book.editions.PERCENT and spaced_percent (tests/test_ui_strings.py checks both on the same cases).
  const PERCENT = /(?<=\p{Nd})[ \u202f\u00a0]?%/gu;
  function spacedPercent(text) {
    return String(text).replace(PERCENT, "\u00a0%");
  }
  function localizeNumbers(text, to) {
    to = to === undefined ? lang() : to;
    if (to === "en") return String(text);
    return String(text).replace(number(), (m, sign, whole, frac, exp) => spanish(sign, whole, frac, exp));
  }
  // A text with each number replaced by {0}, {1}, ... (the numbers pushed onto `numbers`).
  function templateOf(text, numbers) {
    let i = 0;
    return String(text).replace(number(), (m) => { if (numbers) numbers.push(m); return "{" + i++ + "}"; });
  }
  function fill(template, args) {
    return template.replace(/\{(\d+)\}/g, (m, i) => (+i < args.length ? args[+i] : m));
  }
  // One string of the interface in the edition's language (the English where the table has none). Its
  // {0}, {1}, ... take args: a number written the edition's way, a string as it is.
  function tr(text, args) {
    const e = edition();
    const out = e && own(e.strings, text) ? e.strings[text] : text;
    const filled = args ? fill(out, args.map((x) => (typeof x === "number" ? localizeNumbers(String(x)) : String(x)))) : out;
    return e ? spacedPercent(filled) : filled;
  }
  // A text computed in English with numbers in it (a formatted value, an error message): the table's entry
  // for the whole text, else for its template (numbers as {0}, {1}, ...) with its own numbers written the
  // edition's way, else the text with only its numbers rewritten.
  function translated(text) {
    const e = edition();
    text = String(text);
    if (!e) return text;
    if (own(e.strings, text)) return spacedPercent(e.strings[text]);
    const numbers = [], template = templateOf(text, numbers);
    if (numbers.length && own(e.strings, template)) {
      return spacedPercent(fill(e.strings[template], numbers.map((n) => localizeNumbers(n))));
    }
    return spacedPercent(localizeNumbers(text));
  }
  // An element of the page in the edition's language: the table's entry for its HTML (as the browser
  // serializes it: innerHTML), else its text with the numbers rewritten.
  function translateElement(node) {
    const e = edition();
    if (!e) return;
    if (own(e.strings, node.innerHTML)) {
      node.innerHTML = e.strings[node.innerHTML];
      return;
    }
    const walk = document.createTreeWalker(node, 4);  // NodeFilter.SHOW_TEXT
    for (let t = walk.nextNode(); t; t = walk.nextNode()) t.nodeValue = spacedPercent(localizeNumbers(t.nodeValue));
  }
  const I18N = { edition, lang, localizeNumbers, spacedPercent, templateOf, tr, translated, translateElement };
  root.MiniGPTI18N = I18N;
  if (typeof module !== "undefined" && module.exports) module.exports = I18N;
})(typeof globalThis !== "undefined" ? globalThis : this);
