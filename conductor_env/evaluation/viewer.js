// conductor-env workflow viewer: renders the episodes embedded in this page as graphs.
// Every text from the results goes through textContent, never innerHTML: model output is data.
(function () {
  "use strict";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var PAGE_SIZE = 25;
  var NODE_W = 176, NODE_H = 46, COL_GAP = 70, ROW_GAP = 18, PAD = 14;

  function reportError(message) {
    document.body.setAttribute("data-error", message);
    var banner = document.getElementById("errors");
    if (banner) {
      banner.hidden = false;
      banner.textContent = "viewer error: " + message;
    }
  }
  window.addEventListener("error", function (event) { reportError(String(event.message)); });

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    return node;
  }

  function pct(x) { return (100 * x).toFixed(1) + "%"; }
  function usd(x) {
    if (!x) return "$0";
    if (x >= 1) return "$" + x.toFixed(2);
    return x < 1e-4 ? "$" + x.toPrecision(2) : "$" + x.toFixed(4);
  }
  function shorten(text, n) {
    text = String(text || "").replace(/\s+/g, " ").trim();
    return text.length > n ? text.slice(0, n - 1) + "\u2026" : text;
  }

  function verdict(ep) {
    if (ep.infra_error) return { key: "infra", label: "infra error" };
    if (ep.parse_error) return { key: "parse", label: "parse error" };
    return ep.correct ? { key: "correct", label: "correct" } : { key: "wrong", label: "wrong" };
  }

  // ------------------------------------------------------------------ graph of one workflow

  function stepsOf(round) {
    var wf = round.workflow && round.workflow.steps ? round.workflow.steps : [];
    var traces = {};
    (round.trace || []).forEach(function (t) { traces[t.index] = t; });
    return wf.map(function (step, i) {
      var t = traces[i] || null;
      var visible;
      if (t && t.visible) visible = t.visible.slice();
      else if (step.access === "all") { visible = []; for (var j = 0; j < i; j++) visible.push(j); }
      else visible = (step.access || []).filter(function (j) { return j < i; });
      return { index: i, worker: step.worker, subtask: step.subtask, access: step.access, visible: visible, trace: t };
    });
  }

  function layout(steps) {
    var level = [], columns = [];
    steps.forEach(function (s) {
      var l = 0;
      s.visible.forEach(function (j) { if (level[j] !== undefined) l = Math.max(l, level[j] + 1); });
      level[s.index] = l;
      (columns[l] = columns[l] || []).push(s.index);
    });
    var pos = {};
    var rows = Math.max(1, Math.max.apply(null, columns.map(function (c) { return c.length; }).concat([1])));
    var height = PAD * 2 + rows * NODE_H + (rows - 1) * ROW_GAP;
    columns.forEach(function (col, l) {
      var colHeight = col.length * NODE_H + (col.length - 1) * ROW_GAP;
      var top = (height - colHeight) / 2;
      col.forEach(function (index, r) {
        pos[index] = { x: PAD + l * (NODE_W + COL_GAP), y: top + r * (NODE_H + ROW_GAP) };
      });
    });
    return { pos: pos, columns: columns.length, height: height };
  }

  function workerLabel(worker, ep) {
    var name = ep.worker_map ? ep.worker_map[String(worker)] : undefined;
    return "model " + worker + (name ? " \u00b7 " + name : "");
  }

  function edge(from, to) {
    var x1 = from.x + NODE_W, y1 = from.y + NODE_H / 2, x2 = to.x, y2 = to.y + NODE_H / 2;
    var mx = (x1 + x2) / 2;
    return svg("path", {
      d: "M" + x1 + "," + y1 + " C" + mx + "," + y1 + " " + mx + "," + y2 + " " + (x2 - 2) + "," + y2,
      "class": "edge", "marker-end": "url(#arrow)"
    });
  }

  function graph(round, ep, showDetail, answerVerdict) {
    var steps = stepsOf(round);
    if (!steps.length) return null;
    var lay = layout(steps);
    var answerX = PAD + lay.columns * (NODE_W + COL_GAP);
    var width = answerX + 110 + PAD;
    var root = svg("svg", { width: width, height: lay.height, viewBox: "0 0 " + width + " " + lay.height, "class": "graph", role: "img" });
    steps.forEach(function (s) {
      s.visible.forEach(function (j) { if (lay.pos[j]) root.appendChild(edge(lay.pos[j], lay.pos[s.index])); });
    });
    var last = steps[steps.length - 1];
    var answerPos = { x: answerX, y: lay.pos[last.index].y };
    root.appendChild(edge(lay.pos[last.index], { x: answerPos.x, y: answerPos.y }));
    steps.forEach(function (s) {
      var p = lay.pos[s.index];
      var failed = s.trace && s.trace.error;
      var isSelf = ep.worker_map && ep.worker_map[String(s.worker)] === "conductor";
      var g = svg("g", { "class": "node" + (failed ? " failed" : "") + (isSelf ? " self" : "") + (s.trace ? "" : " notrun"), transform: "translate(" + p.x + "," + p.y + ")", tabindex: "0" });
      g.appendChild(svg("rect", { width: NODE_W, height: NODE_H, rx: 8 }));
      var t1 = svg("text", { x: 10, y: 19, "class": "title" });
      t1.textContent = "step " + s.index;
      var t2 = svg("text", { x: 10, y: 36, "class": "sub" });
      t2.textContent = shorten(workerLabel(s.worker, ep), 27);
      var tip = svg("title");
      tip.textContent = "step " + s.index + " (" + workerLabel(s.worker, ep) + ")\n" + shorten(s.subtask, 300);
      g.appendChild(tip); g.appendChild(t1); g.appendChild(t2);
      var open = function () { showDetail(s); };
      g.addEventListener("click", open);
      g.addEventListener("mouseenter", open);
      g.addEventListener("keydown", function (e) { if (e.key === "Enter") open(); });
      root.appendChild(g);
    });
    var a = svg("g", { "class": "node answer " + answerVerdict.key, transform: "translate(" + answerPos.x + "," + answerPos.y + ")" });
    a.appendChild(svg("rect", { width: 100, height: NODE_H, rx: 23 }));
    var at = svg("text", { x: 50, y: 28, "text-anchor": "middle", "class": "title" });
    at.textContent = answerVerdict.label;
    a.appendChild(at);
    root.appendChild(a);
    return root;
  }

  function detailPanel() {
    var panel = el("div", { cls: "detail" });
    panel.appendChild(el("div", { cls: "hint", text: "Hover or click a step to see its subtask and response." }));
    return {
      node: panel,
      show: function (s) {
        panel.textContent = "";
        panel.appendChild(el("div", { cls: "hint", text: "Hover or click a step to see its subtask and response." }));
        var t = s.trace || {};
        var meta = workerLabel(s.worker, this.ep) + " \u00b7 reads " + (s.visible.length ? "steps " + s.visible.join(", ") : "nothing");
        if (s.trace) meta += " \u00b7 " + ((t.prompt_tokens || 0) + (t.completion_tokens || 0)) + " tokens \u00b7 " + usd(t.cost_usd) + " \u00b7 " + (t.latency_s || 0).toFixed(2) + "s";
        panel.appendChild(el("h4", { text: "Step " + s.index }));
        panel.appendChild(el("div", { cls: "meta", text: meta }));
        panel.appendChild(el("div", { cls: "label", text: "Subtask" }));
        panel.appendChild(el("pre", { text: s.subtask || "" }));
        panel.appendChild(el("div", { cls: "label", text: "Response" }));
        panel.appendChild(el("pre", { text: s.trace ? (t.response || "(empty)") : "(not run)" }));
        if (t.error) panel.appendChild(el("div", { cls: "error", text: "error: " + t.error }));
      }
    };
  }

  function roundBlock(round, ep, title, answerVerdict) {
    var block = el("div", { cls: "round" });
    if (title) block.appendChild(el("div", { cls: "label", text: title }));
    var panel = detailPanel();
    panel.ep = ep;
    var g = graph(round, ep, function (s) { panel.show(s); }, answerVerdict);
    if (g) {
      block.appendChild(el("div", { cls: "graph-wrap" }, [g]));
      block.appendChild(panel.node);
      var steps = stepsOf(round);
      panel.show(steps[steps.length - 1]);  // the step whose response is the answer
    } else {
      var why = round.parse_error ? "The workflow did not parse (" + round.parse_error + "): " + (round.parse_detail || "") : (round.reason || "No steps.");
      block.appendChild(el("div", { cls: round.parse_error ? "noparse" : "nosteps", text: why }));
    }
    if (round.parse_error || !g) {
      block.appendChild(el("details", {}, [el("summary", { text: "What the policy wrote" }), el("pre", { text: round.action || "" })]));
    }
    (round.frames || []).forEach(function (frame, k) {
      var sub = roundBlock({ workflow: frame.workflow, trace: frame.trace, frames: [] }, ep, "Self-call frame " + (k + 1) + " (depth " + frame.depth + ")", { key: "frame", label: "answer" });
      block.appendChild(sub);
    });
    return block;
  }

  function card(ep) {
    var v = verdict(ep);
    var head = el("div", { cls: "card-head" }, [
      el("span", { cls: "badge " + v.key, text: v.label }),
      el("span", { cls: "policy", text: ep.policy }),
      el("span", { cls: "pid", text: ep.problem_id + (ep.sample ? " #" + ep.sample : "") }),
      ep.test_set === "public" ? el("span", { cls: "public-only", text: "public tests only", title: "graded on the examples printed in the statement; no hidden tests" }) : null,
      el("span", { cls: "stats", text: ep.domain + " \u00b7 " + (ep.tokens || 0) + " tokens \u00b7 " + usd(ep.cost_usd) +
        (ep.conductor_tokens ? " \u00b7 conductor " + ep.conductor_tokens + " tokens, " + usd(ep.conductor_cost_usd) : "") +
        " \u00b7 " + (ep.wall_s || 0).toFixed(2) + "s" })
    ]);
    var body = el("div", { cls: "card-body" });
    body.appendChild(el("details", {}, [el("summary", { text: "Question" }), el("pre", { text: ep.question || "" })]));
    var rounds = (ep.earlier_rounds || []).concat([ep]);
    rounds.forEach(function (round, k) {
      var rv = k === rounds.length - 1 ? v : verdict(round);
      body.appendChild(roundBlock(round, ep, rounds.length > 1 ? "Round " + (k + 1) : "", rv));
    });
    var answer = el("div", { cls: "answer-box" }, [
      el("div", { cls: "label", text: "Answer \u00b7 " + (ep.infra_error ? "not scored: " + ep.infra_error : (ep.reason || v.label)) }),
      el("pre", { text: ep.answer || "(empty)" })
    ]);
    body.appendChild(answer);
    return el("article", { cls: "card " + v.key, "data-policy": ep.policy, "data-verdict": v.key }, [head, body]);
  }

  // ------------------------------------------------------------------------ page

  function gradedOn(s) {
    if (!s.public_only) return "\u2013";
    return s.public_only === s.scored ? "public only" : s.public_only + "/" + s.scored + " public only";
  }

  function summaryTable(summaries) {
    var showTests = summaries.some(function (s) { return s.public_only > 0; });
    var head = ["policy", "env", "pool", "n", "accuracy", "95% CI"].concat(showTests ? ["graded on"] : [],
      ["tokens", "USD", "latency", "parse err", "infra err"]);
    var table = el("table", { cls: "summary" });
    table.appendChild(el("thead", {}, [el("tr", {}, head.map(function (h) { return el("th", { text: h }); }))]));
    var tbody = el("tbody");
    summaries.forEach(function (s) {
      var scored = s.scored > 0;
      var cells = [s.policy, s.env_id, s.pool, String(s.scored), scored ? pct(s.accuracy) : "\u2013",
        scored ? (100 * s.ci_low).toFixed(1) + "\u2013" + (100 * s.ci_high).toFixed(1) : "\u2013"].concat(showTests ? [gradedOn(s)] : [], [
        Math.round(s.mean_tokens).toLocaleString("en"), usd(s.mean_usd), s.mean_latency_s.toFixed(2) + "s",
        scored ? pct(s.parse_error_rate) : "\u2013", String(s.infra_errors)]);
      tbody.appendChild(el("tr", {}, cells.map(function (c) { return el("td", { text: c }); })));
    });
    table.appendChild(tbody);
    return table;
  }

  function main() {
    var data = JSON.parse(document.getElementById("data").textContent);
    var episodes = data.episodes;
    document.getElementById("summary").appendChild(summaryTable(data.summaries));
    var policySelect = document.getElementById("policy");
    var policies = [];
    episodes.forEach(function (ep) { if (policies.indexOf(ep.policy) < 0) policies.push(ep.policy); });
    policies.forEach(function (p) { policySelect.appendChild(el("option", { value: p, text: p })); });
    var verdictSelect = document.getElementById("verdict");
    var search = document.getElementById("search");
    var list = document.getElementById("episodes");
    var pager = document.getElementById("pager");
    var status = document.getElementById("status");
    var page = 0;

    function filtered() {
      var p = policySelect.value, v = verdictSelect.value, q = search.value.trim().toLowerCase();
      return episodes.filter(function (ep) {
        return (!p || ep.policy === p) && (!v || verdict(ep).key === v) &&
          (!q || (ep.problem_id + " " + ep.question).toLowerCase().indexOf(q) >= 0);
      });
    }

    function render() {
      var items = filtered();
      var pages = Math.max(1, Math.ceil(items.length / PAGE_SIZE));
      page = Math.min(page, pages - 1);
      list.textContent = "";
      var shown = items.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
      shown.forEach(function (ep) { list.appendChild(card(ep)); });
      pager.textContent = "";
      var prev = el("button", { text: "\u2190 previous", type: "button" });
      var next = el("button", { text: "next \u2192", type: "button" });
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
      prev.addEventListener("click", function () { page -= 1; render(); window.scrollTo(0, 0); });
      next.addEventListener("click", function () { page += 1; render(); window.scrollTo(0, 0); });
      pager.appendChild(prev);
      pager.appendChild(el("span", { text: " page " + (page + 1) + " of " + pages + " \u00b7 " + items.length + " episodes " }));
      pager.appendChild(next);
      status.textContent = "rendered " + shown.length + " of " + episodes.length + " episodes";
      document.body.setAttribute("data-rendered", String(shown.length));
    }

    // Filters live in the address (#policy=...&verdict=...&q=...), so a view can be shared.
    function readHash() {
      var params = new URLSearchParams(window.location.hash.slice(1));
      if (params.has("policy") && policies.indexOf(params.get("policy")) >= 0) policySelect.value = params.get("policy");
      if (params.has("verdict")) verdictSelect.value = params.get("verdict");
      if (params.has("q")) search.value = params.get("q");
    }
    function writeHash() {
      var params = new URLSearchParams();
      if (policySelect.value) params.set("policy", policySelect.value);
      if (verdictSelect.value) params.set("verdict", verdictSelect.value);
      if (search.value.trim()) params.set("q", search.value.trim());
      var hash = params.toString();
      if (history.replaceState) history.replaceState(null, "", hash ? "#" + hash : window.location.pathname);
    }
    function changed() { page = 0; writeHash(); render(); }
    [policySelect, verdictSelect].forEach(function (s) { s.addEventListener("change", changed); });
    search.addEventListener("input", changed);
    readHash();
    render();
  }

  try { main(); } catch (error) { reportError(String(error && error.stack || error)); throw error; }
})();
