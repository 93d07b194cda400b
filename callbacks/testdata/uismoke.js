// Runs ui/app.js against an OpenAPI document with a minimal DOM stub and
// prints how many operations it rendered. Usage: node uismoke.js doc.json app.js
"use strict";
const fs = require("fs");
const [docPath, appPath] = process.argv.slice(2);
const doc = JSON.parse(fs.readFileSync(docPath, "utf8"));

class El {
  constructor(tag) {
    this.tagName = tag; this.children = []; this.dataset = {}; this.textContent = "";
    this.className = ""; this.value = ""; this.listeners = {}; this.q = {};
    const self = this;
    this.classList = { add(c) { self.className += " " + c; }, toggle() {} };
  }
  appendChild(c) { this.children.push(c); return c; }
  addEventListener(ev, fn) { this.listeners[ev] = fn; }
  querySelector(sel) { return this.q[sel] || (this.q[sel] = new El(sel)); }
  querySelectorAll() { return []; }
  cloneNode() { return new El(this.tagName); }
  set innerHTML(_) { throw new Error("innerHTML must not be used"); }
}
const els = {};
global.document = {
  title: "",
  getElementById(id) {
    if (id === "op-template") return { content: { firstElementChild: new El("details") } };
    return els[id] || (els[id] = new El(id));
  },
  createElement(tag) { return new El(tag); },
};
global.sessionStorage = { getItem() { return ""; }, setItem() {} };
global.fetch = async (url) => {
  if (url !== "/v3/api-docs") throw new Error("unexpected fetch " + url);
  return { json: async () => doc };
};
process.on("unhandledRejection", (e) => { console.error(e); process.exit(1); });
eval(fs.readFileSync(appPath, "utf8"));
setTimeout(() => {
  const ops = els.ops.children.filter((c) => c.tagName === "details");
  for (const op of ops) {
    const p = op.q[".payload"];
    if (p && p.value) JSON.parse(p.value); // the prefilled examples are JSON
  }
  console.log("rendered operations: " + ops.length);
}, 50);
