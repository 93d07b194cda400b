// Offline viewer for the callback service's OpenAPI document: lists the
// operations with their parameters, schemas and responses, and sends
// requests with the owner token ("Try it"). No external assets.
"use strict";

(function () {
  const TOKEN_KEY = "bridge.callbacks.token";
  const tokenInput = document.getElementById("token");
  const filterInput = document.getElementById("filter");
  const opsEl = document.getElementById("ops");
  let doc = null;

  tokenInput.value = sessionStorage.getItem(TOKEN_KEY) || "";
  tokenInput.addEventListener("change", () => sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim()));
  filterInput.addEventListener("input", applyFilter);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function resolve(schema) {
    let s = schema || {};
    const seen = new Set();
    while (s.$ref && !seen.has(s.$ref)) {
      seen.add(s.$ref);
      const name = s.$ref.replace("#/components/schemas/", "");
      const target = (doc.components.schemas || {})[name] || {};
      s = Object.assign({ title: name }, target, s.description ? { description: s.description } : {});
    }
    return s;
  }

  function typeName(s) {
    const r = resolve(s);
    if (s.$ref) return r.title || "object";
    if (r.anyOf) return r.anyOf.map(typeName).join(" | ");
    let t = Array.isArray(r.type) ? r.type.join(" | ") : (r.type || "any");
    if (r.type === "array" && r.items) t = "array of " + typeName(r.items);
    if (r.format) t += " (" + r.format + ")";
    return t;
  }

  function constraints(s) {
    const r = resolve(s);
    const out = [];
    if (r.enum) out.push("one of " + r.enum.map(v => JSON.stringify(v)).join(", "));
    for (const k of ["minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"]) {
      if (r[k] !== undefined) out.push(k + " " + r[k]);
    }
    if (r.items) {
      const it = resolve(r.items);
      if (it.minLength !== undefined || it.maxLength !== undefined) out.push("items " + (it.minLength || 0) + ".." + (it.maxLength || "∞") + " chars");
      if (it.enum) out.push("items one of " + it.enum.join(", "));
    }
    return out.join("; ");
  }

  // renderSchema draws an object's properties as a nested list.
  function renderSchema(schema, depth) {
    const r = resolve(schema);
    const box = el("div");
    if (depth > 4) return box;
    let obj = r;
    if (r.type === "array" && r.items) obj = resolve(r.items);
    if (r.anyOf) obj = resolve(r.anyOf[0]);
    if (!obj.properties) {
      box.appendChild(el("code", "type", typeName(schema)));
      return box;
    }
    const req = new Set(obj.required || []);
    const ul = el("ul");
    for (const [name, ps] of Object.entries(obj.properties)) {
      const li = el("li");
      li.appendChild(el("span", "prop", name));
      if (req.has(name)) li.appendChild(el("span", "req", "required"));
      li.appendChild(el("span", "type", typeName(ps)));
      const c = constraints(ps);
      if (c) li.appendChild(el("span", "cons", c));
      const d = ps.description || resolve(ps).description;
      if (d) li.appendChild(el("div", "muted", d));
      const inner = resolve(ps);
      const nested = inner.properties || (inner.items && resolve(inner.items).properties) || (inner.anyOf && resolve(inner.anyOf[0]).properties);
      if (nested && ps.$ref !== schema.$ref) li.appendChild(renderSchema(ps, depth + 1));
      ul.appendChild(li);
    }
    box.appendChild(ul);
    return box;
  }

  // example builds a minimal request body: required properties only.
  function example(schema, depth) {
    const r = resolve(schema);
    if (depth > 5) return null;
    if (r.anyOf) return example(r.anyOf[0], depth + 1);
    if (r.enum) return r.enum[0];
    const t = Array.isArray(r.type) ? r.type[0] : r.type;
    switch (t) {
      case "object": {
        const o = {};
        for (const name of r.required || []) o[name] = example(r.properties[name], depth + 1);
        return o;
      }
      case "array": return [example(r.items || {}, depth + 1)];
      case "integer": case "number": return r.minimum !== undefined ? r.minimum : 0;
      case "boolean": return false;
      case "string":
        if (r.format === "uuid") return "00000000-0000-0000-0000-000000000000";
        if (r.format === "date-time") return new Date().toISOString();
        if (r.format === "uri") return "https://example.com/hooks";
        return "string";
      default: return null;
    }
  }

  function renderOp(path, method, op) {
    const node = document.getElementById("op-template").content.firstElementChild.cloneNode(true);
    node.dataset.search = (method + " " + path + " " + (op.summary || "")).toLowerCase();
    const m = node.querySelector(".method");
    m.textContent = method.toUpperCase();
    m.classList.add("m-" + method);
    node.querySelector(".path").textContent = path;
    node.querySelector(".summary").textContent = op.summary || "";
    node.querySelector(".desc").textContent = op.description || "";

    const params = op.parameters || [];
    const plist = node.querySelector(".params .list");
    if (params.length === 0) node.querySelector(".params").classList.add("hidden");
    for (const p of params) {
      const row = el("div");
      row.appendChild(el("code", "prop", p.name));
      row.appendChild(el("span", "type", p.in + ", " + typeName(p.schema || {})));
      if (p.description) row.appendChild(el("span", "cons", p.description));
      plist.appendChild(row);
    }

    const body = op.requestBody && op.requestBody.content["application/json"];
    if (body) node.querySelector(".reqbody .schema").appendChild(renderSchema(body.schema, 0));
    else node.querySelector(".reqbody").classList.add("hidden");

    const rlist = node.querySelector(".responses .list");
    for (const [code, resp] of Object.entries(op.responses || {})) {
      const row = el("div", "resp");
      row.appendChild(el("span", "status", code));
      row.appendChild(el("span", "", resp.description || ""));
      const content = resp.content && (resp.content["application/json"] || resp.content["application/problem+json"]);
      if (content) {
        const sub = el("details");
        sub.appendChild(el("summary", "muted", typeName(content.schema)));
        sub.appendChild(renderSchema(content.schema, 0));
        row.appendChild(sub);
      }
      rlist.appendChild(row);
    }

    const inputs = node.querySelector(".inputs");
    for (const p of params) {
      const label = el("label");
      label.appendChild(el("span", "", p.name + (p.required ? " *" : "")));
      const input = el("input");
      input.name = p.name;
      input.dataset.in = p.in;
      label.appendChild(input);
      inputs.appendChild(label);
    }
    const payload = node.querySelector(".payload");
    if (body) payload.value = JSON.stringify(example(body.schema, 0), null, 2);
    else payload.classList.add("hidden");

    const result = node.querySelector(".result");
    node.querySelector("form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      let url = path;
      const query = new URLSearchParams();
      for (const input of inputs.querySelectorAll("input")) {
        const v = input.value.trim();
        if (input.dataset.in === "path") url = url.replace("{" + input.name + "}", encodeURIComponent(v));
        else if (v !== "") query.set(input.name, v);
      }
      if ([...query].length) url += "?" + query.toString();
      const headers = { "Accept": "application/json" };
      const token = tokenInput.value.trim();
      if (token) headers["Authorization"] = "Bearer " + token;
      const init = { method: method.toUpperCase(), headers };
      if (body) {
        headers["Content-Type"] = "application/json";
        init.body = payload.value;
      }
      result.textContent = "…";
      try {
        const resp = await fetch(url, init);
        const text = await resp.text();
        let shown = text;
        try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) { /* not JSON */ }
        result.textContent = resp.status + " " + resp.statusText + "\n\n" + shown;
      } catch (err) {
        result.textContent = "request failed: " + err;
      }
    });
    return node;
  }

  function applyFilter() {
    const q = filterInput.value.trim().toLowerCase();
    for (const op of opsEl.querySelectorAll(".op")) {
      op.classList.toggle("hidden", q !== "" && !op.dataset.search.includes(q));
    }
  }

  async function load() {
    try {
      const resp = await fetch("/v3/api-docs");
      doc = await resp.json();
    } catch (err) {
      opsEl.textContent = "Could not load /v3/api-docs: " + err;
      return;
    }
    document.getElementById("description").textContent = doc.info.description || "";
    document.title = doc.info.title;
    opsEl.textContent = "";
    const byTag = new Map();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const tag = (op.tags && op.tags[0]) || "other";
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push([path, method, op]);
      }
    }
    for (const [tag, ops] of [...byTag.entries()].sort()) {
      opsEl.appendChild(el("h2", "", tag));
      ops.sort((a, b) => (a[0] + a[1]).localeCompare(b[0] + b[1]));
      for (const [path, method, op] of ops) opsEl.appendChild(renderOp(path, method, op));
    }
  }

  load();
})();
