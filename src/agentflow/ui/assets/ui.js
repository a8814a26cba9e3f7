// flowc ui: live updates. The server says over Server-Sent Events when what the page shows
// changed (its version); the page then fetches itself again and swaps its <main>, unless
// someone is typing an answer in a form (then it waits for the next change).
(function () {
  var body = document.body;
  var url = body.getAttribute("data-live");
  if (!url || !window.EventSource) { return; }
  var here = body.getAttribute("data-page") || location.pathname;
  if (here !== location.pathname) {  // a refused answer, shown at the form's address
    history.replaceState(null, "", here);
  }
  var busy = false;
  function typing() {
    var a = document.activeElement;
    return a && a.form && a.form.classList.contains("question") && a.value !== "";
  }
  function refresh(version) {
    if (busy || typing()) { return; }
    busy = true;
    fetch(here + location.search, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        var old = document.querySelector("main");
        if (fresh && old) { old.replaceWith(fresh); }
        body.setAttribute("data-version", version);
        var status = doc.querySelector("#run-facts .badge");
        var said = document.getElementById("live-status");
        if (said) { said.textContent = status ? "run " + status.textContent : "runs updated"; }
      })
      .finally(function () { busy = false; });
  }
  var source = null;
  function listen() {
    if (source) { return; }
    source = new EventSource(url);
    source.addEventListener("change", function (e) {
      if (e.data !== body.getAttribute("data-version")) { refresh(e.data); }
    });
  }
  // a page left (or kept in the back-forward cache) holds no connection: a browser opens few
  // at once to one server, and the next page's requests would wait for them
  window.addEventListener("pagehide", function () {
    if (source) { source.close(); source = null; }
  });
  window.addEventListener("pageshow", listen);
  listen();
})();
