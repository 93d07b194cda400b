// Starts Swagger UI on the documents listed in the page's data-docs (see
// httpx/docsui): those that answer fill the selector, and the one named by
// ?doc=<id>, else the first, is shown. Choosing another reloads the page
// with its ?doc=. Nothing is loaded from outside this origin: the validator
// badge (validator.swagger.io) is off.
(function () {
  "use strict";
  var docs = JSON.parse(document.body.getAttribute("data-docs") || "[]");
  var select = document.getElementById("docs-select");
  var status = document.getElementById("docs-status");
  var wanted = new URLSearchParams(window.location.search).get("doc");

  function available(doc) {
    return fetch(doc.url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? doc : null; }, function () { return null; });
  }

  Promise.all(docs.map(available)).then(function (found) {
    found = found.filter(function (d) { return d !== null; });
    if (found.length === 0) {
      status.textContent = "No API document answered.";
      return;
    }
    var shown = found[0];
    found.forEach(function (d) {
      var opt = document.createElement("option");
      opt.value = d.id;
      opt.textContent = d.title;
      select.appendChild(opt);
      if (d.id === wanted) {
        shown = d;
      }
    });
    select.value = shown.id;
    select.addEventListener("change", function () {
      var q = new URLSearchParams(window.location.search);
      q.set("doc", select.value);
      window.location.search = q.toString();
    });
    window.ui = SwaggerUIBundle({
      url: shown.url,
      dom_id: "#swagger-ui",
      validatorUrl: null,
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis],
      layout: "BaseLayout"
    });
  });
})();
