// report.html's sample browser. The page's data sits in inert <script type="application/octet-stream">
// elements: "se-index" (the columns the list and filters need) and "se-c<N>" (the full samples,
// CHUNK per element, long prompt texts stored once per chunk in "texts" and referenced by
// number), each canonical JSON deflated and base64-encoded (publish/html.py). Nothing is
// fetched: chunks are inflated with DecompressionStream only when a view needs them (open a sample:
// one chunk; a text search: every chunk once, its search text cached), so the summary paints first
// and a 100k-request report stays usable. Data is only ever written with textContent.
(function () {
  "use strict";
  var PAGE = 50;        // rows per page of the sample list
  var PARSED_KEEP = 8;  // parsed chunks kept for re-opening; search text is cached separately
  var $ = function (id) { return document.getElementById(id); };

  function inflate(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).text().then(JSON.parse);
  }

  var idx = null, C = null, L = null, idMap = null, nChunks = 0;
  var parsed = new Map();   // chunk number -> Promise of {texts, samples} (LRU, PARSED_KEEP)
  var hay = [];             // chunk number -> {own: text per sample, refs, texts} lower-cased
  var visible = [], page = 0, gen = 0, current = -1;

  function chunk(ci) {
    var p = parsed.get(ci);
    if (p) { parsed.delete(ci); parsed.set(ci, p); return p; }
    var el = $("se-c" + ci);
    if (!el) return Promise.reject(new Error("sample chunk " + ci + " is missing"));
    p = inflate(el.textContent);
    parsed.set(ci, p);
    while (parsed.size > PARSED_KEEP) parsed.delete(parsed.keys().next().value);
    return p;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function pretty(v) { return typeof v === "string" ? v : JSON.stringify(v, null, 1); }
  function num(x, digits) {
    if (x === null || x === undefined) return "";
    if (x === 0) return "0";
    return Number(x).toPrecision(digits || 3);
  }
  function thousands(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  // The sample's own verdict (the suite's primary grader's), not a count of graders.
  function verdictOf(i) { return [L.primary[C.primary[i]], C.tone[i]]; }
  function cost(i, digits) {
    return L.unpriced[C.engine[i]] ? "not priced" : num(C.cost_usd[i], digits);
  }

  // -- filters ---------------------------------------------------------------------------------
  var FILTERS = ["suite", "engine", "condition", "status", "verdict"];

  function fillSelect(name) {
    var sel = $("f-" + name), labels = L[name];
    sel.textContent = "";
    var all = el("option", null, "all (" + labels.length + ")");
    all.value = "-1";
    sel.appendChild(all);
    labels.map(function (v, code) { return [v, code]; })
      .sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; })
      .forEach(function (vc) {
        var o = el("option", null, vc[0] === "" ? "(none)" : vc[0]);
        o.value = String(vc[1]);
        sel.appendChild(o);
      });
    sel.addEventListener("change", applyFilters);
  }

  function baseMatches() {
    var want = {};
    FILTERS.forEach(function (f) { want[f] = Number($("f-" + f).value); });
    var out = [];
    for (var i = 0; i < idx.n; i++) {
      if (want.suite >= 0 && C.suite[i] !== want.suite) continue;
      if (want.engine >= 0 && C.engine[i] !== want.engine) continue;
      if (want.condition >= 0 && C.condition[i] !== want.condition) continue;
      if (want.status >= 0 && C.status[i] !== want.status) continue;
      if (want.verdict >= 0 && C.verdicts[i].indexOf(want.verdict) < 0) continue;
      out.push(i);
    }
    return out;
  }

  // A message's text: inline, or a shared text of its chunk ("ref").
  function content(m, texts) {
    if (m && typeof m === "object" && "ref" in m) return texts[m.ref];
    return m && typeof m === "object" ? m.content : m;
  }

  // The sample's own search text; its shared texts are searched once per chunk (ensureHay).
  function searchText(i, s) {
    var parts = [C.id[i], C.item[i], L.condition[C.condition[i]], L.error_kind[C.error_kind[i]],
      s.output, s.error_message, s.model];
    s.messages.forEach(function (m) {
      if (!(m && typeof m === "object" && "ref" in m)) parts.push(pretty(content(m)));
    });
    if (s.trajectory && s.trajectory.length) parts.push(JSON.stringify(s.trajectory));
    s.grades.forEach(function (g) {
      parts.push(g.grader, g.category, JSON.stringify(g.details), JSON.stringify(g.extra));
    });
    return parts.join("\n").toLowerCase();
  }

  function ensureHay(ci) {
    if (hay[ci]) return Promise.resolve(hay[ci]);
    return chunk(ci).then(function (doc) {
      hay[ci] = {
        own: doc.samples.map(function (s, j) { return searchText(ci * idx.chunk + j, s); }),
        refs: doc.samples.map(function (s) {
          return s.messages.filter(function (m) { return m && typeof m === "object" && "ref" in m; })
            .map(function (m) { return m.ref; });
        }),
        texts: doc.texts.map(function (t) { return t.toLowerCase(); }),
      };
      return hay[ci];
    });
  }

  // Words must all occur; a "quoted phrase" must occur as written (case-insensitive).
  function queryTerms(q) {
    var out = [], re = /"([^"]+)"|(\S+)/g, m;
    q = q.toLowerCase();
    while ((m = re.exec(q)) !== null) out.push(m[1] !== undefined ? m[1] : m[2]);
    return out;
  }

  // The filters and the query the list now shows, on <body> (tests and scripts wait on them).
  function done(terms) {
    document.body.dataset.searching = "0";
    document.body.dataset.query = $("f-search").value;
    document.body.dataset.shown = String(visible.length);
    render();
  }

  function applyFilters() {
    var my = ++gen;
    page = 0;
    var base = baseMatches();
    var terms = queryTerms($("f-search").value);
    if (!terms.length) { visible = base; done(terms); return Promise.resolve(); }
    document.body.dataset.searching = "1";
    var need = [];
    base.forEach(function (i) {
      var ci = Math.floor(i / idx.chunk);
      if (need[need.length - 1] !== ci) need.push(ci);
    });
    var k = 0;
    function step() {
      if (my !== gen) return Promise.resolve();
      if (k < need.length) {
        $("sample-count").textContent = "searching… " + k + " of " + need.length + " chunks";
        return ensureHay(need[k++]).then(step);
      }
      var hits = [];  // chunk -> term -> which shared texts hold the term (computed once)
      visible = base.filter(function (i) {
        var ci = Math.floor(i / idx.chunk), j = i % idx.chunk, h = hay[ci];
        if (!hits[ci]) {
          hits[ci] = terms.map(function (t) {
            return h.texts.map(function (x) { return x.indexOf(t) >= 0; });
          });
        }
        return terms.every(function (t, k) {
          return h.own[j].indexOf(t) >= 0 || h.refs[j].some(function (r) { return hits[ci][k][r]; });
        });
      });
      done(terms);
      return Promise.resolve();
    }
    return step();
  }

  // -- list ------------------------------------------------------------------------------------
  function render() {
    var pages = Math.max(1, Math.ceil(visible.length / PAGE));
    page = Math.max(0, Math.min(page, pages - 1));
    var start = page * PAGE, rows = visible.slice(start, start + PAGE);
    $("sample-count").textContent = visible.length
      ? "showing " + thousands(start + 1) + "–" + thousands(start + rows.length) + " of " +
        thousands(visible.length) + " samples" +
        (visible.length < idx.n ? " (" + thousands(idx.n) + " in all)" : "")
      : "no sample matches (" + thousands(idx.n) + " in all)";
    $("page-info").textContent = "page " + (page + 1) + " of " + pages;
    $("page-prev").disabled = page === 0;
    $("page-next").disabled = page >= pages - 1;
    var body = $("sample-rows");
    body.textContent = "";
    rows.forEach(function (i) {
      var tr = el("tr");
      tr.dataset.i = String(i);
      tr.dataset.sample = C.id[i];
      if (i === current) tr.className = "current";
      var a = el("a", null, C.id[i].slice(-12));
      a.href = "#sample=" + encodeURIComponent(C.id[i]);
      a.title = C.id[i];
      var td = el("td");
      td.appendChild(a);
      tr.appendChild(td);
      [L.suite[C.suite[i]], L.engine[C.engine[i]], L.condition[C.condition[i]], C.item[i],
        C.repeat[i]].forEach(function (v) { tr.appendChild(el("td", null, v)); });
      var st = L.status[C.status[i]], ek = L.error_kind[C.error_kind[i]];
      var std = el("td");
      std.appendChild(el("span", "badge " + st, st + (ek ? " · " + ek : "")));
      tr.appendChild(std);
      var v = verdictOf(i), vtd = el("td");
      vtd.appendChild(el("span", "badge " + v[1], v[0]));
      tr.appendChild(vtd);
      tr.appendChild(el("td", null, num(C.latency_s[i])));
      tr.appendChild(el("td", null, cost(i)));
      tr.appendChild(el("td", "snip", C.snippet[i]));
      tr.addEventListener("click", function (ev) {
        if (ev.target.tagName !== "A") location.hash = "sample=" + encodeURIComponent(C.id[i]);
      });
      body.appendChild(tr);
    });
  }

  // -- one sample ------------------------------------------------------------------------------
  function fact(box, label, value) {
    var d = el("div");
    d.appendChild(el("span", null, label + ": "));
    d.appendChild(document.createTextNode(value === "" || value === undefined ? "–" : String(value)));
    box.appendChild(d);
  }

  function showSample(i, s, texts) {
    var box = $("sample-detail"), id = C.id[i];
    box.textContent = "";
    var head = el("header"), h = el("h3", null, "Sample " + id);
    head.appendChild(h);
    var tools = el("div"), link = el("a", null, "link to this sample");
    link.href = "#sample=" + encodeURIComponent(id);
    var close = el("button", null, "close");
    close.type = "button";
    close.id = "sample-close";
    close.addEventListener("click", function () {
      box.hidden = true;
      current = -1;
      history.replaceState(null, "", location.pathname + location.search);
      render();
    });
    tools.appendChild(link);
    tools.appendChild(document.createTextNode(" "));
    tools.appendChild(close);
    head.appendChild(tools);
    box.appendChild(head);

    // "Why was this wrong?": the verdict, the expected answer beside the response, the
    // prompt, then each grader's details; the request's facts after them.
    var v = s.verdict || {}, vbox = el("div", "verdict-box " + (v.tone || ""));
    vbox.id = "sample-verdict";
    vbox.appendChild(el("span", null, "Verdict: "));
    vbox.appendChild(el("strong", null, v.word));
    if (v.grader) {
      vbox.appendChild(document.createTextNode(" (grader " + v.grader + ": " +
        (v.passed === true ? "pass" : v.passed === false ? "fail" : "n/a") + ")"));
    }
    box.appendChild(vbox);
    if (s.error_message) box.appendChild(el("p", "error-box", s.error_message));

    var t = s.target;
    var th4 = el("h4", null, "Expected answer" + (t ? " (item field \u201c" + t.field + "\u201d)" : ""));
    th4.id = "sample-target-head";
    box.appendChild(th4);
    if (t) box.appendChild(el("pre", "target", pretty(t.value)));
    else box.appendChild(el("p", "hint", "no expected answer in this item (the grader details say what was checked)"));

    box.appendChild(el("h4", null, "Response"));
    box.appendChild(el("pre", "response", s.output === "" ? "(empty)" : s.output));

    box.appendChild(el("h4", null, "Prompt"));
    var msgs = Array.isArray(s.messages) ? s.messages : [s.messages];
    if (!msgs.length) box.appendChild(el("p", "hint", "(no prompt stored)"));
    msgs.forEach(function (m) {
      var isMsg = m && typeof m === "object" && ("content" in m || "ref" in m);
      box.appendChild(el("div", "msg-role", isMsg ? m.role || "message" : "message"));
      box.appendChild(el("pre", "msg", pretty(isMsg ? content(m, texts) : m)));
    });

    box.appendChild(el("h4", null, "Graders (" + s.grades.length + ")"));
    if (!s.grades.length) box.appendChild(el("p", "hint", "no graded row for this request"));
    else {
      var wrap = el("div", "table-wrap"), tbl = el("table", "grades"), hr = el("tr");
      ["grader", "version", "verdict", "score", "category", "details", "other fields"]
        .forEach(function (c) { hr.appendChild(el("th", null, c)); });
      var thd = el("thead");
      thd.appendChild(hr);
      tbl.appendChild(thd);
      var tb = el("tbody");
      s.grades.forEach(function (g) {
        var tr = el("tr");
        tr.appendChild(el("td", null, g.grader));
        tr.appendChild(el("td", null, g.version));
        var vd = el("td"), p = g.passed;
        vd.appendChild(el("span", "badge " + (p === true ? "pass" : p === false ? "fail" : ""),
          p === true ? "pass" : p === false ? "fail" : "n/a"));
        tr.appendChild(vd);
        tr.appendChild(el("td", null, g.score === null ? "" : num(g.score, 4)));
        tr.appendChild(el("td", null, g.category));
        var d = el("td");
        d.appendChild(el("pre", null, pretty(g.details)));
        tr.appendChild(d);
        var x = el("td");
        if (Object.keys(g.extra).length) x.appendChild(el("pre", null, pretty(g.extra)));
        tr.appendChild(x);
        tb.appendChild(tr);
      });
      tbl.appendChild(tb);
      wrap.appendChild(tbl);
      box.appendChild(wrap);
    }

    box.appendChild(el("h4", null, "Request"));
    var facts = el("div", "facts");
    fact(facts, "suite", L.suite[C.suite[i]]);
    fact(facts, "engine", L.engine[C.engine[i]]);
    fact(facts, "model", s.model);
    fact(facts, "condition", L.condition[C.condition[i]]);
    fact(facts, "item", C.item[i]);
    fact(facts, "repeat", C.repeat[i]);
    fact(facts, "status", L.status[C.status[i]]);
    fact(facts, "error kind", L.error_kind[C.error_kind[i]]);
    fact(facts, "latency s", num(C.latency_s[i], 4));
    fact(facts, "cost $", cost(i, 4));
    fact(facts, "tokens in / out", s.tokens_in + " / " + s.tokens_out);
    fact(facts, "attempts", s.attempts);
    fact(facts, "finish reason", s.finish_reason);
    fact(facts, "engine path", s.engine_path);
    fact(facts, "seed", s.seed);
    box.appendChild(facts);
    var traj = Array.isArray(s.trajectory) ? s.trajectory : [s.trajectory];
    box.appendChild(el("h4", null, "Agent trajectory (" + traj.length + " steps)"));
    if (!traj.length) box.appendChild(el("p", "hint", "single call: no trajectory"));
    traj.forEach(function (stepv, k) {
      var d = el("div", "step");
      d.appendChild(el("div", "msg-role", "step " + (k + 1) +
        (stepv && stepv.role ? " · " + stepv.role : "")));
      d.appendChild(el("pre", null, pretty(stepv)));
      box.appendChild(d);
    });
    box.appendChild(el("h4", null, "Request parameters"));
    box.appendChild(el("pre", "params", pretty(s.params)));
    if (!s.raw) box.appendChild(el("p", "hint", "this request has graded rows but no raw row"));
    box.hidden = false;
    document.body.dataset.sample = id;
  }

  function openFromHash() {
    var m = /^#sample=(.+)$/.exec(location.hash);
    if (!m) return Promise.resolve();
    var id = decodeURIComponent(m[1]), i = idMap.get(id), box = $("sample-detail");
    if (i === undefined) {
      box.textContent = "";
      box.appendChild(el("p", "error-box", "no sample with key " + id + " in this report"));
      box.hidden = false;
      return Promise.resolve();
    }
    return chunk(Math.floor(i / idx.chunk)).then(function (doc) {
      current = i;
      showSample(i, doc.samples[i % idx.chunk], doc.texts);
      render();
      box.scrollIntoView({ block: "start" });
      performance.mark("sample-shown");
    });
  }

  function main() {
    return inflate($("se-index").textContent).then(function (data) {
      idx = data;
      C = idx.cols;
      L = idx.labels;
      nChunks = Math.ceil(idx.n / idx.chunk);
      idMap = new Map();
      C.id.forEach(function (id, i) { idMap.set(id, i); });
      FILTERS.forEach(fillSelect);
      var timer = null;
      $("f-search").addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(applyFilters, 250);
      });
      $("page-prev").addEventListener("click", function () { page--; render(); });
      $("page-next").addEventListener("click", function () { page++; render(); });
      window.addEventListener("hashchange", openFromHash);
      return applyFilters();
    }).then(openFromHash).then(function () {
      document.body.dataset.ready = String(nChunks >= 0);
      performance.mark("samples-ready");
    });
  }

  main().catch(function (err) {
    $("sample-count").textContent = "could not load the samples: " + err;
    throw err;
  });
})();
