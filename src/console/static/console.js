'use strict';
// The console works without JavaScript; this only makes parts of a page update by themselves. An
// element with data-live="<url>" has its content replaced by the HTML fragment at that URL (rendered
// and escaped by the server) every two seconds, until the fragment marks itself final (data-final).
document.querySelectorAll('[data-live]').forEach((element) => {
  const refresh = async () => {
    try {
      const response = await fetch(element.dataset.live, {
        credentials: 'same-origin',
        headers: { Accept: 'text/html' },
      });
      if (response.ok) element.innerHTML = await response.text();
    } catch {
      // A dropped connection: the next refresh tries again.
    }
    if (!element.querySelector('[data-final]')) setTimeout(refresh, 2000);
  };
  if (!element.querySelector('[data-final]')) setTimeout(refresh, 2000);
});
