// Images the API serves (document assets, rendered PDF pages) shown in the page. An <img src>
// request cannot carry the API key header, so the bytes are fetched through api.js and shown
// from an object URL; each owner (an answer, the evidence panel) keeps its URLs and revokes
// them all when it goes away (dispose). The page's CSP allows `img-src blob:` for this.
import { errorFrom, request } from "./api.js";
import { t } from "./i18n.js";
import "./strings/chat.js";

export const ASSET_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** "/api/assets/ID" for a well-formed asset id, else null. */
export function assetPath(id) {
  return ASSET_ID.test(String(id)) ? `/api/assets/${encodeURIComponent(id)}` : null;
}

export class ObjectUrls {
  constructor() {
    this.loads = new Map(); // path -> Promise<{url, headers} | null>
    this.ready = new Map(); // path -> {url, headers}
    this.disposed = false;
  }

  /**
   * The object URL and response headers of path's bytes, once per path: {url, headers}, null
   * once disposed; rejects with the ApiError when the server refuses.
   */
  load(path) {
    if (this.disposed) return Promise.resolve(null);
    if (!this.loads.has(path)) this.loads.set(path, this.fetch(path));
    return this.loads.get(path);
  }

  async fetch(path) {
    const response = await request(path, { headers: { accept: "image/*" } });
    if (!response.ok) throw await errorFrom(response);
    const blob = await response.blob();
    if (this.disposed) return null; // the owner went away while the bytes were coming
    const loaded = { url: URL.createObjectURL(blob), headers: response.headers };
    this.ready.set(path, loaded);
    return loaded;
  }

  /** Give every img[data-asset] under root its image (at once when already loaded). */
  fill(root) {
    for (const img of root.querySelectorAll("img[data-asset]")) {
      const path = assetPath(img.dataset.asset);
      if (!path) {
        img.remove();
        continue;
      }
      const known = this.ready.get(path);
      if (known) {
        img.src = known.url;
        continue;
      }
      img.dataset.loading = "true";
      this.load(path).then((loaded) => {
        delete img.dataset.loading;
        if (loaded) img.src = loaded.url;
      }, (error) => {
        delete img.dataset.loading;
        img.dataset.failed = "true";
        img.title = t("chat.asset.loadFailed", { reason: error.message || error });
      });
    }
  }

  /** Revoke every URL; later loads resolve to null. */
  dispose() {
    this.disposed = true;
    for (const { url } of this.ready.values()) URL.revokeObjectURL(url);
    this.ready.clear();
    this.loads.clear();
  }
}
