// smartvector-report: sorting, the system and sweep filters, and the query drill-down (from #report-data).
"use strict";
(function () {
  const LABELS = { c: "correct", s: "stale", r: "rumor", o: "other" };

  function cellOf(row, key) {
    for (const td of row.cells) if (td.dataset.key === key) return td;
    return null;
  }

  // A cell's sort key: its data-value as a number when it is one, else as text; null and "" sort last.
  function sortValue(td) {
    const raw = td ? td.dataset.value : undefined;
    if (raw === undefined || raw === "" || raw === "null") return null;
    const x = Number(raw);
    return Number.isNaN(x) ? raw.replace(/^"|"$/g, "") : x;
  }

  function compare(a, b, dir) {
    if (a === null && b === null) return 0;
    if (a === null) return 1;
    if (b === null) return -1;
    let c;
    if (typeof a === "number" && typeof b === "number") c = a - b;
    else c = String(a).localeCompare(String(b), undefined, { numeric: true });
    return dir === "asc" ? c : -c;
  }

  // First click sorts descending, the next ascending, and so on; data-sorted marks the column.
  function sortBy(th) {
    const table = th.closest("table");
    const dir = th.dataset.sorted === "desc" ? "asc" : "desc";
    for (const other of table.tHead.querySelectorAll("th")) other.removeAttribute("data-sorted");
    th.dataset.sorted = dir;
    const key = th.dataset.key;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map((r, i) => [r, sortValue(cellOf(r, key)), i]);
    rows.sort((x, y) => compare(x[1], y[1], dir) || x[2] - y[2]);
    for (const [r] of rows) body.appendChild(r);
  }

  function systemFilter(section) {
    const box = section.querySelector(".system-filter");
    if (!box) return;
    box.addEventListener("change", () => {
      const shown = new Set(Array.from(box.querySelectorAll("input[type=checkbox]"))
        .filter((i) => i.checked).map((i) => i.value));
      for (const el of section.querySelectorAll(
        "table.main-table tr[data-system], table.category-table tr[data-system], table.hits[data-system]")) {
        el.hidden = !shown.has(el.dataset.system);
      }
    });
  }

  function sweepFilter(section) {
    const selects = Array.from(section.querySelectorAll("select[data-filter], select[data-column]"));
    const table = section.querySelector("table.sweep-table");
    const count = section.querySelector(".row-count");
    const apply = () => {
      const active = selects.filter((s) => s.value !== "")
        .map((s) => [s.dataset.filter || s.dataset.column, s.value]);
      let n = 0;
      for (const row of table.tBodies[0].rows) {
        const ok = active.every(([key, value]) => {
          const td = cellOf(row, key);
          return td !== null && td.dataset.value === value;
        });
        row.hidden = !ok;
        if (ok) n += 1;
      }
      if (count) count.textContent = n + " of " + table.tBodies[0].rows.length + " rows";
    };
    for (const s of selects) s.addEventListener("change", apply);
    apply();
  }

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function fmt(x) {
    return x === null || x === undefined ? "-" : Number(x).toFixed(3);
  }

  function renderQuery(section, run, qid) {
    const detail = section.querySelector(".query-detail");
    detail.textContent = "";
    const q = run.queries[qid];
    if (!q) return;
    detail.appendChild(el("p", { class: "query-text" },
      q.text === null || q.text === undefined ? "(the query's text is not stored in this run folder)" : q.text));
    const meta = el("p", {});
    meta.appendChild(document.createTextNode("as of "));
    meta.appendChild(el("span", { class: "as-of" }, q.as_of === null || q.as_of === undefined ? "(not stored in this run folder)" : q.as_of));
    meta.appendChild(document.createTextNode(" · " + qid + " · split " + q.split + " · category " + q.category));
    detail.appendChild(meta);
    const key = el("p", { class: "label-key" });
    for (const name of ["correct", "stale", "rumor"]) {
      key.appendChild(el("span", { class: "label-chip", "data-label": name }, name));
    }
    detail.appendChild(key);
    const shown = new Set(Array.from(section.querySelectorAll(".system-filter input:checked")).map((i) => i.value));
    const grid = el("div", { class: "hits-grid" });
    for (const system of run.systems) {
      const h = q.hits[system];
      if (!h) continue;
      const signals = h.g ? run.signals.filter((s) => h.g[s]) : [];
      const table = el("table", { class: signals.length ? "hits with-signals" : "hits", "data-system": system });
      table.hidden = !shown.has(system);
      table.appendChild(el("caption", {}, system));
      const head = el("tr", {});
      for (const name of ["rank", "chunk", "score", "label", ...signals]) head.appendChild(el("th", {}, name));
      table.appendChild(el("thead", {})).appendChild(head);
      const body = table.appendChild(el("tbody", {}));
      h.c.forEach((ci, i) => {
        const label = LABELS[h.l[i]] || "other";
        const chunk = run.chunks[ci];
        const tr = el("tr", { class: "hit", "data-rank": String(i + 1), "data-label": label, "data-chunk": chunk });
        tr.appendChild(el("td", {}, String(i + 1)));
        tr.appendChild(el("td", { class: "chunk" }, chunk));
        tr.appendChild(el("td", {}, fmt(h.s[i])));
        tr.appendChild(el("td", {}, label));
        for (const s of signals) tr.appendChild(el("td", {}, fmt(h.g[s][i])));
        body.appendChild(tr);
      });
      grid.appendChild(table);
    }
    detail.appendChild(grid);
  }

  function drill(section, data) {
    const run = data.runs[section.dataset.run];
    const select = section.querySelector("select.query-select");
    if (!run || !select) return;
    select.addEventListener("change", () => renderQuery(section, run, select.value));
    if (select.value) renderQuery(section, run, select.value);
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const th of document.querySelectorAll("th.sortable")) th.addEventListener("click", () => sortBy(th));
    const node = document.getElementById("report-data");
    const data = node ? JSON.parse(node.textContent) : { runs: {} };
    for (const section of document.querySelectorAll("section.run")) {
      systemFilter(section);
      drill(section, data);
    }
    for (const section of document.querySelectorAll("section.sweep")) sweepFilter(section);
  });
})();
