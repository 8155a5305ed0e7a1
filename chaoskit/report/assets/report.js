// chaoskit HTML report: open or close every episode, and show only the failing ones. No network, no library.
(function () {
  "use strict";
  function episodes() { return Array.prototype.slice.call(document.querySelectorAll("details.episode")); }
  function on(id, fn) { var b = document.getElementById(id); if (b) { b.addEventListener("click", fn); } }
  on("expand-all", function () { episodes().forEach(function (d) { d.open = true; }); });
  on("collapse-all", function () { episodes().forEach(function (d) { d.open = false; }); });
  on("only-failing", function (ev) {
    var only = ev.currentTarget.getAttribute("aria-pressed") !== "true";
    ev.currentTarget.setAttribute("aria-pressed", only ? "true" : "false");
    episodes().forEach(function (d) { d.hidden = only && !d.classList.contains("fail"); });
  });
  var bar = document.querySelector(".toolbar");
  if (bar) { bar.hidden = false; }
})();
