// evalstore ui: a page while it computes. The panel (#compare-progress, #page-progress) names the
// computation's progress URL (data-poll); every 250 ms this script fetches it and shows what
// it says (the replicates done, the running estimate), and once the answer is whole reloads
// the page, which the finished computation then answers.
(() => {
  "use strict";
  const panel = document.querySelector("section[data-poll]");
  if (!panel) return;
  const body = document.getElementById("progress-body");
  const url = panel.dataset.poll;
  const poll = async () => {
    try {
      const response = await fetch(url, { cache: "no-store" });
      const state = await response.json();
      if (state.done) {
        window.location.reload();
        return;
      }
      body.innerHTML = state.html; // the app's own HTML, every user string escaped
    } catch (error) {
      // the app is busy or restarting: ask again
    }
    window.setTimeout(poll, 250);
  };
  window.setTimeout(poll, 250);
})();
