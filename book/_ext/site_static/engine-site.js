/* Added by book/_ext/site_assets.py: small fixes to how the theme behaves for a reader.
 *
 * 1. Sidebar buttons. sphinx-book-theme 1.3 puts its menu and contents buttons in the
 *    article header, but pydata-sphinx-theme 0.17 (the version it pins) binds its handlers
 *    to the FIRST `.primary-toggle` / `.secondary-toggle` on the page: its own header button,
 *    which the book theme hides (pydata-sphinx-theme issue #2451). A click on any later
 *    button is forwarded to that first one, so both themes' handlers run as designed:
 *    on a wide screen the menu button hides or shows the sidebar, on a narrow one the
 *    buttons open the chapter list and the page's contents as dialogs.
 * 2. A solution's title ("Solution to Exercise 3") opens the solution. The title holds a
 *    link back to the exercise; a click on it toggled the solution and then jumped away.
 * 3. Inline math wraps. MathJax 3 has no automatic line breaking, so a long formula is one
 *    unbreakable box. After typesetting, each inline formula is cut into groups at its
 *    top-level operators (relations, binary operators, commas: where TeX itself allows an
 *    inline break) and the browser may wrap between groups. Punctuation that follows a
 *    formula is kept on its line.
 * 4. Wide display equations and tables scroll sideways; those that do are marked with
 *    `eng-overflows` (a shadow at the edge that has more to show) so a reader knows.
 * 5. A click on a figure opens it at full size in a dialog (scrollable on a phone);
 *    a click, Escape or the close button closes it. A player's frame opens as the
 *    frame it shows.
 * 6. Players (matplotlib's JavaScript animations) show "Frame k of n" (and the frame's
 *    step label, when engine.figures.interactive was given labels) and their speed, and
 *    say what the - and + buttons do.
 * 7. Search: a result's snippet is taken from the article only (not the page's header
 *    and contents list), a formula the snippet's cut splits is left out, its math is typeset,
 *    and a page listed twice (the page, and a definition on it) is listed once.
 * 8. Hover previews. A pointer resting on a cross-reference to a theorem, definition,
 *    figure, table or numbered equation shows the target in a box beside the link:
 *    from this page, or from another page of the site (fetched once, same origin;
 *    its math typeset by the MathJax already on the page). sphinx-tippy would do
 *    this, but it names each page's tips file with a random uuid (two builds would
 *    differ) and loads tippy.js and Popper from a CDN by default; the box needs
 *    neither library.
 * 9. Progress, kept in this browser only (local storage, no account, no network): each
 *    chapter's "Mark this chapter done" button (book/_ext/reader_path.py) is a toggle with
 *    aria-pressed; the intro's map of the chapters marks the chapters done and the next one
 *    to read, and has a button that clears all progress.
 */
(function () {
  "use strict";

  function forwardSidebarToggles() {
    ["primary", "secondary"].forEach(function (kind) {
      var toggles = document.querySelectorAll("." + kind + "-toggle");
      if (toggles.length < 2) {
        return;
      }
      var bound = toggles[0];
      Array.prototype.slice.call(toggles, 1).forEach(function (button) {
        button.addEventListener("click", function (event) {
          event.preventDefault();
          event.stopPropagation();
          button.blur();
          bound.click();
        });
      });
    });
  }

  function solutionTitlesOpen() {
    document
      .querySelectorAll(".solution > .admonition-title a.reference")
      .forEach(function (link) {
        link.addEventListener("click", function (event) {
          // togglebutton's title handler finds its button only when the title itself or
          // the button is clicked, not a link inside the title: click the button for it
          event.preventDefault();
          event.stopPropagation();
          var button = link.closest(".admonition-title").querySelector(".toggle-button");
          if (button) {
            button.click();
          }
        });
        link.setAttribute("title", "Show or hide the solution");
      });
    // arriving at a solution's address opens it
    var target = window.location.hash && document.getElementById(
      decodeURIComponent(window.location.hash.slice(1)));
    if (target && target.classList.contains("solution") &&
        target.classList.contains("toggle-hidden")) {
      var title = target.querySelector(":scope > .admonition-title");
      if (title) {
        title.click();
      }
    }
  }

  /* -- inline math ------------------------------------------------------------ */

  function isComma(node) {
    return node.tagName === "MJX-MO" && node.textContent === "" &&
      !!node.querySelector(":scope > mjx-c.mjx-c2C");
  }

  function breakBefore(node) {
    // TeX breaks inline math after a relation or a binary operator: MathJax marks both
    // with a `space` attribute (their spacing), and the atom after them with another.
    // A comma's next atom is a break too, which TeX does not do, but a phone needs.
    var previous = node.previousElementSibling;
    if (!previous || previous.tagName !== "MJX-MO") {
      return false;
    }
    return (previous.hasAttribute("space") && node.hasAttribute("space")) || isComma(previous);
  }

  function groupInlineFormula(container) {
    var math = container.querySelector(":scope > mjx-math");
    if (!math || math.classList.contains("eng-grouped")) {
      return;
    }
    math.classList.add("eng-grouped");
    var children = Array.prototype.slice.call(math.children);
    if (children.length < 2) {
      return;
    }
    var breaks = children.map(breakBefore); // before any child moves
    var group = null;
    children.forEach(function (child, i) {
      if (!group || breaks[i]) {
        group = document.createElement("mjx-eng-group");
        math.insertBefore(group, child);
      }
      group.appendChild(child);
    });
  }

  var PUNCTUATION = /^[.,;:!?)\]’”]+/;

  function keepPunctuation(span) {
    // ". Then": the period after a formula stays on the formula's line. The formula and
    // the punctuation share a no-wrap box; inside the formula, groups still wrap.
    var next = span.nextSibling;
    if (!next || next.nodeType !== Node.TEXT_NODE) {
      return;
    }
    var match = next.data.match(PUNCTUATION);
    if (!match) {
      return;
    }
    var together = document.createElement("span");
    together.className = "eng-math-with-punctuation";
    span.parentNode.insertBefore(together, span);
    together.appendChild(span);
    together.appendChild(document.createTextNode(match[0]));
    next.data = next.data.slice(match[0].length);
  }

  function wrapInlineMath() {
    document.querySelectorAll("span.math").forEach(function (span) {
      var container = span.querySelector(":scope > mjx-container:not([display])");
      if (!container) {
        return;
      }
      span.classList.add("eng-inline-math");
      groupInlineFormula(container);
      keepPunctuation(span);
    });
  }

  /* -- things that scroll sideways --------------------------------------------- */

  var SCROLLERS = "div.math mjx-container, .pst-scrollable-table-container, " +
    ".bd-article .table-wrapper";

  function markOverflows() {
    document.querySelectorAll(SCROLLERS).forEach(function (box) {
      var overflows = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("eng-overflows", overflows);
      if (overflows) {
        box.setAttribute("tabindex", "0"); // scrollable with the keyboard too
        if (!box.getAttribute("title")) {
          box.setAttribute("title", "Wider than the page: scroll sideways to see the rest");
        }
        var atStart = box.scrollLeft <= 1;
        var atEnd = box.scrollLeft + box.clientWidth >= box.scrollWidth - 1;
        box.classList.toggle("eng-more-left", !atStart);
        box.classList.toggle("eng-more-right", !atEnd);
      } else {
        box.classList.remove("eng-more-left", "eng-more-right");
      }
    });
  }

  function watchOverflows() {
    markOverflows();
    document.querySelectorAll(SCROLLERS).forEach(function (box) {
      box.addEventListener("scroll", markOverflows, { passive: true });
    });
    var pending = null;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(markOverflows, 100);
    });
  }

  /* -- figures open at full size ------------------------------------------------ */

  var FIGURES = "article figure img, article .cell_output img";

  function zoomDialog() {
    var dialog = document.getElementById("eng-zoom");
    if (dialog) {
      return dialog;
    }
    dialog = document.createElement("dialog");
    dialog.id = "eng-zoom";
    dialog.className = "eng-zoom";
    dialog.setAttribute("aria-label", "Figure at full size");
    dialog.innerHTML = '<button type="button" class="eng-zoom-close" aria-label="Close">' +
      "\u00d7</button><div class=\"eng-zoom-frame\"></div>";
    dialog.addEventListener("click", function (event) {
      if (event.target === dialog || event.target.closest(".eng-zoom-close") ||
          event.target.tagName === "IMG") {
        dialog.close();
      }
    });
    dialog.addEventListener("close", function () {
      dialog.querySelector(".eng-zoom-frame").textContent = "";
    });
    document.body.appendChild(dialog);
    return dialog;
  }

  function openFullSize(img) {
    var dialog = zoomDialog();
    var copy = document.createElement("img");
    copy.src = img.currentSrc || img.src;
    copy.alt = img.alt;
    copy.width = img.naturalWidth;
    dialog.querySelector(".eng-zoom-frame").appendChild(copy);
    dialog.showModal();
  }

  function figuresOpenFullSize() {
    document.querySelectorAll(FIGURES).forEach(function (img) {
      if (img.closest("a[href]")) {
        return; // already a link
      }
      img.classList.add("eng-zoomable");
      img.setAttribute("tabindex", "0");
      img.setAttribute("role", "button");
      img.setAttribute("title", "Open the figure at full size");
      img.addEventListener("click", function () { openFullSize(img); });
      img.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          openFullSize(img);
        }
      });
    });
  }

  /* -- players ------------------------------------------------------------------ */

  function playerStatus(animation) {
    var slider = document.getElementById(animation.slider_id);
    var player = slider && slider.closest("div.animation");
    return player && player.querySelector(".eng-player-status");
  }

  function showFrame(animation) {
    var status = playerStatus(animation);
    if (!status) {
      return;
    }
    var total = animation.frames.length;
    var k = animation.current_frame + 1;
    var labels = status.engLabels || [];
    var label = labels[animation.current_frame];
    status.querySelector(".eng-frame").textContent =
      "Frame " + k + " of " + total + (label ? ": " + label : "");
    var speed = (animation.engInterval0 || animation.interval) / animation.interval;
    status.querySelector(".eng-speed").textContent =
      "speed " + speed.toFixed(1) + "\u00d7 (\u2212 slower, + faster)";
  }

  function patchPlayer(animation) {
    // each player's script defines its own Animation class: wrap the object's methods
    if (animation.engPatched) {
      return;
    }
    animation.engPatched = true;
    animation.engInterval0 = animation.interval;
    ["set_frame", "slower", "faster"].forEach(function (name) {
      var original = animation[name];
      animation[name] = function () {
        var result = original.apply(animation, arguments);
        showFrame(animation);
        return result;
      };
    });
  }

  function labelPlayers() {
    document.querySelectorAll("div.animation").forEach(function (player) {
      if (player.querySelector(".eng-player-status")) {
        return;
      }
      var status = document.createElement("div");
      status.className = "eng-player-status";
      status.setAttribute("aria-live", "polite");
      status.innerHTML = '<span class="eng-frame"></span><span class="eng-speed"></span>';
      var wrapper = player.closest(".engine-interactive");
      try {
        status.engLabels = JSON.parse((wrapper && wrapper.dataset.frameLabels) || "[]");
      } catch (error) {
        status.engLabels = [];
      }
      var controls = player.querySelector(".anim-controls") || player;
      controls.insertBefore(status, controls.firstChild);
      var slower = player.querySelector("button[title='Decrease speed']");
      var faster = player.querySelector("button[title='Increase speed']");
      if (slower) { slower.title = "Slower: 0.7 times the speed"; }
      if (faster) { faster.title = "Faster: about 1.4 times the speed"; }
      var slider = player.querySelector("input.anim-slider");
      var id = slider && slider.id.replace("_anim_slider", "");
      var animation = id && window["anim" + id];
      if (animation) {
        patchPlayer(animation);
        showFrame(animation);
      } else {
        var total = slider ? parseInt(slider.max, 10) + 1 : 0;
        status.querySelector(".eng-frame").textContent = "Frame 1 of " + total;
      }
    });
  }

  function setUpPlayers() {
    if (!document.querySelector("div.animation")) {
      return;
    }
    // matplotlib creates each player's object in a setTimeout(0) of its own script
    setTimeout(labelPlayers, 50);
  }

  /* -- search results ------------------------------------------------------------- */

  function loadMathJax(callback) {
    if (window.MathJax && window.MathJax.typesetPromise) {
      callback();
      return;
    }
    window.MathJax = { startup: { typeset: false, ready: function () {
      window.MathJax.startup.defaultReady();
      window.MathJax.startup.promise.then(callback);
    } } };
    var script = document.createElement("script");
    var root = document.documentElement.dataset.content_root || "";
    script.src = root + "_static/mathjax/tex-chtml.js";
    script.defer = true;
    document.head.appendChild(script);
  }

  // Sphinx cuts a result's snippet at a fixed length from its start, which may fall inside
  // an inline formula: drop the cut formula's piece at either end, so what is left typesets.
  function balanceMath(context) {
    if (!context) {
      return;
    }
    var text = context.textContent;
    var close = text.indexOf("\\)");
    if (close >= 0 && (text.indexOf("\\(") < 0 || close < text.indexOf("\\("))) {
      text = "..." + text.slice(close + 2);
    }
    var open = text.lastIndexOf("\\(");
    if (open >= 0 && open > text.lastIndexOf("\\)")) {
      text = text.slice(0, open).replace(/\s+$/, "") + " ...";
    }
    if (text !== context.textContent) {
      context.textContent = text;
    }
  }

  function improveSearch() {
    var out = document.getElementById("search-results");
    // searchtools.js declares `const Search`: a global binding, not a property of window
    if (!out || typeof Search === "undefined" || !Search.htmlToText) {
      return;
    }
    var original = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".headerlink, script, style, .bd-header-article, nav, " +
                           ".prev-next-area, footer, .bd-sidebar-secondary")
        .forEach(function (element) { element.remove(); });
      var article = doc.querySelector("article.bd-article");
      var block = anchor && article ? article.querySelector(anchor) : null;
      var root = block || article;
      return root ? root.textContent.replace(/\s+/g, " ") : original(htmlString, anchor);
    };
    var seen = {};
    var pending = null;
    new MutationObserver(function () {
      out.querySelectorAll("ul.search > li:not([data-eng-seen])").forEach(function (item) {
        item.dataset.engSeen = "1";
        var link = item.querySelector("a");
        var page = link ? link.getAttribute("href").split("#")[0].split("?")[0] : "";
        if (page && seen[page]) {
          item.remove(); // the same page again (a definition on it): listed once
          return;
        }
        seen[page] = true;
      });
      // a snippet arrives after its item, once its page is fetched
      out.querySelectorAll("p.context:not([data-eng-balanced])").forEach(function (context) {
        context.dataset.engBalanced = "1";
        balanceMath(context);
      });
      // the summary counted the page twice: count what is listed
      var listed = out.querySelectorAll("ul.search > li").length;
      out.querySelectorAll(":scope > p, p.search-summary").forEach(function (status) {
        var counted = status.textContent.replace(/found \d+ page\(s\)/, "found " + listed + " page(s)");
        if (counted !== status.textContent) {
          status.textContent = counted;
        }
      });
      clearTimeout(pending);
      pending = setTimeout(function () {
        loadMathJax(function () {
          window.MathJax.typesetPromise([out]).catch(function () {});
        });
      }, 300);
    }).observe(out, { childList: true, subtree: true });
  }

  function afterMath(callback) {
    var mathjax = window.MathJax;
    if (mathjax && mathjax.startup && mathjax.startup.promise) {
      mathjax.startup.promise.then(callback);
    } else if (document.querySelector(".math") && (afterMath.tries = (afterMath.tries || 0) + 1) < 100) {
      setTimeout(function () { afterMath(callback); }, 100); // MathJax not loaded yet
    } else {
      callback();
    }
  }

  var PREVIEWED = "div.proof, figure, div.math, table";
  var previewPages = {};

  function previewPage(url) {
    if (!previewPages[url]) {
      previewPages[url] = fetch(url).then(function (response) {
        if (!response.ok) {
          throw new Error(response.status);
        }
        return response.text();
      }).then(function (text) {
        return new DOMParser().parseFromString(text, "text/html");
      });
    }
    return previewPages[url];
  }

  function previewTarget(doc, id) {
    var target = doc.getElementById(id);
    if (!target) {
      return null;
    }
    // an equation's anchor is a span in front of it; a figure's id is on the figure
    if (!target.matches(PREVIEWED) && target.nextElementSibling &&
        target.nextElementSibling.matches(PREVIEWED)) {
      target = target.nextElementSibling;
    }
    return target.matches(PREVIEWED) ? target : null;
  }

  function previewBox() {
    var box = document.getElementById("eng-preview");
    if (!box) {
      box = document.createElement("div");
      box.id = "eng-preview";
      box.className = "eng-preview";
      box.setAttribute("role", "tooltip");
      box.hidden = true;
      document.body.appendChild(box);
    }
    return box;
  }

  function showPreview(link, target, base, fetched) {
    var box = previewBox();
    var copy = target.cloneNode(true);
    [copy].concat(Array.prototype.slice.call(copy.querySelectorAll("[id]"))).forEach(
      function (el) { el.removeAttribute("id"); });
    copy.querySelectorAll("a.headerlink").forEach(function (a) { a.remove(); });
    copy.querySelectorAll("img[src]").forEach(function (img) {
      img.src = new URL(img.getAttribute("src"), base).href;
      img.classList.remove("eng-zoomable");
    });
    box.innerHTML = "";
    box.appendChild(copy);
    box.hidden = false;
    var rect = link.getBoundingClientRect();
    var width = Math.min(520, document.documentElement.clientWidth - 16);
    box.style.width = width + "px";
    box.style.left = Math.max(8, Math.min(rect.left, document.documentElement.clientWidth - width - 8)) + window.scrollX + "px";
    var below = rect.bottom + 6;
    box.style.top = below + window.scrollY + "px";
    var height = box.getBoundingClientRect().height;
    if (below + height > window.innerHeight && rect.top - 6 - height > 0) {
      box.style.top = rect.top - 6 - height + window.scrollY + "px";
    }
    if (fetched && window.MathJax && window.MathJax.typesetPromise) {
      window.MathJax.typesetPromise([box]).catch(function () {});
    }
  }

  function hidePreview() {
    var box = document.getElementById("eng-preview");
    if (box) {
      box.hidden = true;
      box.innerHTML = "";
    }
  }

  function hoverPreviews() {
    var timer = null;
    var current = null;
    document.querySelectorAll(".bd-article a.reference.internal[href*='#']").forEach(function (link) {
      var url = new URL(link.getAttribute("href"), window.location.href);
      var id = decodeURIComponent(url.hash.slice(1));
      if (!id || url.origin !== window.location.origin) {
        return;
      }
      var samePage = url.pathname === window.location.pathname;
      if (samePage && !previewTarget(document, id)) {
        return; // a section or a code line: the link says enough
      }
      link.addEventListener("mouseenter", function () {
        clearTimeout(timer);
        current = link;
        timer = setTimeout(function () {
          var found = samePage ? Promise.resolve(document) : previewPage(url.pathname);
          found.then(function (doc) {
            var target = previewTarget(doc, id);
            if (target && current === link) {
              showPreview(link, target, url.href, !samePage);
            }
          }).catch(function () {});
        }, 250);
      });
      link.addEventListener("mouseleave", function () {
        clearTimeout(timer);
        current = null;
        hidePreview();
      });
      link.addEventListener("focus", function () { link.dispatchEvent(new Event("mouseenter")); });
      link.addEventListener("blur", function () { link.dispatchEvent(new Event("mouseleave")); });
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape") {
        hidePreview();
      }
    });
  }

  var PROGRESS_KEY = "autodiff-book:done";

  function doneChapters() {
    try {
      var stored = JSON.parse(window.localStorage.getItem(PROGRESS_KEY) || "[]");
      return Array.isArray(stored) ? stored : [];
    } catch (e) {
      return [];  // storage off (a private window) or unreadable: nothing is done
    }
  }

  function saveDone(list) {
    try {
      if (list.length) {
        window.localStorage.setItem(PROGRESS_KEY, JSON.stringify(list));
      } else {
        window.localStorage.removeItem(PROGRESS_KEY);
      }
    } catch (e) { /* storage off: the button still shows the state of this visit */ }
  }

  function showPressed(button, pressed) {
    button.setAttribute("aria-pressed", pressed ? "true" : "false");
    button.textContent = pressed ? "Done: press to undo" : "Mark this chapter done";
  }

  function chapterProgress() {
    document.querySelectorAll(".reader-progress").forEach(function (box) {
      var slug = box.getAttribute("data-chapter");
      var button = box.querySelector("button.reader-done");
      showPressed(button, doneChapters().indexOf(slug) >= 0);
      button.addEventListener("click", function () {
        var list = doneChapters().filter(function (s) { return s !== slug; });
        var pressed = button.getAttribute("aria-pressed") !== "true";
        if (pressed) {
          list.push(slug);
        }
        saveDone(list);
        showPressed(button, pressed);
      });
    });
  }

  function mapProgress() {
    var table = document.querySelector("#map-of-the-chapters table");
    if (!table) {
      return;
    }
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
    function slugOf(row) {
      var link = row.querySelector("a.reference.internal");
      return link ? link.getAttribute("href").split("#")[0].replace(/^.*\//, "").replace(/\.html$/, "") : null;
    }
    function paint() {
      var done = doneChapters();
      var next = null;
      rows.forEach(function (row) {
        var slug = slugOf(row);
        var mark = row.querySelector(".reader-mark");
        if (!mark) {
          mark = document.createElement("span");
          mark.className = "reader-mark";
          (row.cells[0].querySelector("p") || row.cells[0]).appendChild(mark);
        }
        row.classList.remove("reader-is-done", "reader-is-next");
        if (done.indexOf(slug) >= 0) {
          row.classList.add("reader-is-done");
          mark.textContent = " (done)";
        } else if (next === null) {
          next = row;
          row.classList.add("reader-is-next");
          mark.textContent = done.length ? " (read next)" : "";
        } else {
          mark.textContent = "";
        }
      });
      status.textContent = done.length
        ? done.length + " of " + rows.length + " chapters marked done in this browser."
        : "No chapter is marked done in this browser yet.";
      clear.disabled = !done.length;
    }
    var box = document.createElement("div");
    box.className = "reader-map-progress";
    var status = document.createElement("p");
    status.setAttribute("role", "status");
    var clear = document.createElement("button");
    clear.type = "button";
    clear.className = "reader-clear";
    clear.textContent = "Clear all progress";
    clear.addEventListener("click", function () {
      saveDone([]);
      paint();
    });
    var where = document.createElement("p");
    where.textContent = "Your progress is kept in this browser only (its local storage): no " +
      "account, nothing sent anywhere. Mark a chapter done at its end, when you can do what it " +
      "lists without notes.";
    box.appendChild(status);
    box.appendChild(clear);
    box.appendChild(where);
    var after = table.closest(".pst-scrollable-table-container") || table;
    after.parentNode.insertBefore(box, after.nextSibling);
    paint();
  }

  function start() {
    forwardSidebarToggles();
    // the togglebutton script adds the titles' handlers when the DOM is ready
    setTimeout(solutionTitlesOpen, 0);
    figuresOpenFullSize();
    hoverPreviews();
    setUpPlayers();
    improveSearch();
    chapterProgress();
    mapProgress();
    afterMath(function () {
      wrapInlineMath();
      watchOverflows();
      document.documentElement.classList.add("eng-math-ready");
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
