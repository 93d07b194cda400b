// Interactive viewer of the platform's OpenAPI 3.1 document. It renders each
// operation with its parameters and schemas and can send a request with a
// bearer token typed into the page (never stored).
(function () {
  "use strict";
  var state = { doc: null };

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }

  function resolve(schema) {
    if (schema && schema.$ref) {
      var name = schema.$ref.split("/").pop();
      return state.doc.components.schemas[name] || {};
    }
    return schema || {};
  }

  function example(schema, depth) {
    schema = resolve(schema);
    if ((depth || 0) > 4) return null;
    if (schema.enum) return schema.enum[0];
    var t = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    if (schema.oneOf) return example(schema.oneOf[0], depth + 1);
    if (schema.allOf) return example(schema.allOf[0], depth + 1);
    switch (t) {
      case "object":
        var o = {};
        Object.keys(schema.properties || {}).forEach(function (k) { o[k] = example(schema.properties[k], (depth || 0) + 1); });
        return o;
      case "array": return [];
      case "integer": return 1;
      case "number": return 1;
      case "boolean": return false;
      case "string": return schema.format === "uuid" ? "00000000-0000-0000-0000-000000000000" : "";
      default: return null;
    }
  }

  function render() {
    var doc = state.doc, main = document.getElementById("ops");
    document.getElementById("title").textContent = doc.info.title;
    document.getElementById("version").textContent = "version " + doc.info.version + " · OpenAPI " + doc.openapi + " · " + (doc.info.description || "");
    var filter = document.getElementById("filter").value.toLowerCase();
    main.textContent = "";
    Object.keys(doc.paths).sort().forEach(function (path) {
      var item = doc.paths[path];
      Object.keys(item).sort().forEach(function (method) {
        var op = item[method];
        var text = (method + " " + path + " " + (op.summary || "")).toLowerCase();
        if (filter && text.indexOf(filter) < 0) return;
        main.appendChild(operation(path, method, op));
      });
    });
  }

  function operation(path, method, op) {
    var d = el("details", { "class": "op" + (op.deprecated ? " deprecated" : "") });
    d.appendChild(el("summary", {}, [
      el("span", { "class": "method " + method, text: method }),
      el("span", { "class": "path", text: path }),
      el("span", { text: op.summary || "" })
    ]));
    var body = el("div", { "class": "body" });
    if (op.description) body.appendChild(el("p", { text: op.description }));
    var inputs = {};
    if (op.parameters && op.parameters.length) {
      var t = el("table", {}, [el("tr", {}, [el("th", { text: "parameter" }), el("th", { text: "in" }), el("th", { text: "value" }), el("th", { text: "description" })])]);
      op.parameters.forEach(function (p) {
        var input = el("input", { placeholder: p.required ? "required" : "optional" });
        inputs[p.in + ":" + p.name] = input;
        t.appendChild(el("tr", {}, [el("td", { text: p.name }), el("td", { text: p.in }), el("td", {}, [input]), el("td", { text: p.description || "" })]));
      });
      body.appendChild(t);
    }
    var bodyInput = null;
    if (op.requestBody) {
      var schema = op.requestBody.content["application/json"].schema;
      body.appendChild(el("p", { text: "Request body (application/json):" }));
      bodyInput = el("textarea", {});
      bodyInput.value = JSON.stringify(example(schema, 0), null, 2);
      body.appendChild(bodyInput);
    }
    var responses = el("table", {}, [el("tr", {}, [el("th", { text: "status" }), el("th", { text: "description" })])]);
    Object.keys(op.responses || {}).forEach(function (st) {
      responses.appendChild(el("tr", {}, [el("td", { text: st }), el("td", { text: op.responses[st].description || "" })]));
    });
    body.appendChild(responses);
    var out = el("pre", { text: "" });
    var button = el("button", { text: "Send request" });
    button.addEventListener("click", function () { send(path, method, inputs, bodyInput, out); });
    body.appendChild(el("div", { "class": "try" }, [button]));
    body.appendChild(out);
    d.appendChild(body);
    return d;
  }

  function send(path, method, inputs, bodyInput, out) {
    var url = path, query = [], headers = {};
    Object.keys(inputs).forEach(function (k) {
      var v = inputs[k].value, where = k.split(":")[0], name = k.slice(where.length + 1);
      if (v === "") return;
      if (where === "path") url = url.replace("{" + name + "}", encodeURIComponent(v));
      if (where === "query") query.push(encodeURIComponent(name) + "=" + encodeURIComponent(v));
      if (where === "header") headers[name] = v;
    });
    if (query.length) url += "?" + query.join("&");
    var token = document.getElementById("token").value.trim();
    if (token) headers["Authorization"] = "Bearer " + token;
    var init = { method: method.toUpperCase(), headers: headers };
    if (bodyInput) { headers["Content-Type"] = "application/json"; init.body = bodyInput.value; }
    out.textContent = "…";
    fetch(url, init).then(function (res) {
      return res.text().then(function (text) {
        var lines = [res.status + " " + res.statusText];
        res.headers.forEach(function (v, k) { lines.push(k + ": " + v); });
        try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON */ }
        out.textContent = lines.join("\n") + "\n\n" + text;
      });
    }).catch(function (e) { out.textContent = String(e); });
  }

  document.getElementById("filter").addEventListener("input", function () { if (state.doc) render(); });
  fetch("/docs/openapi.json").then(function (r) { return r.json(); }).then(function (doc) {
    state.doc = doc;
    render();
  }).catch(function (e) { document.getElementById("ops").textContent = "could not load the API document: " + e; });
})();
