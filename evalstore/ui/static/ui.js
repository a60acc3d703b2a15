// evalstore ui: draw the figures of the page. Each figure is a JSON block
// <script type="application/json" data-plot="ID"> (never run as a script) drawn into the
// element ID with the app's own plotly.min.js; the pages carry no inline script.
(function () {
  "use strict";
  function draw() {
    var blocks = document.querySelectorAll('script[type="application/json"][data-plot]');
    for (var i = 0; i < blocks.length; i++) {
      var target = document.getElementById(blocks[i].dataset.plot);
      if (typeof Plotly === "undefined") {
        target.textContent = "plotly.min.js did not load from this app.";
        continue;
      }
      var fig = JSON.parse(blocks[i].textContent);
      Plotly.newPlot(target, fig.data, fig.layout, {responsive: true, displaylogo: false});
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
