// The service's JSON API, as the pages use it: GET with query parameters, POST with a JSON body.
// A non-2xx answer throws an ApiError whose message is the service's `detail`, verbatim.

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

/** `path?k=v&...`, leaving out parameters that are null, undefined or "". */
export function withQuery(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const qs = query.toString();
  return qs ? `${path}?${qs}` : path;
}

/** The message to show for a failed answer: `detail` when it is a string (dagsched's 4xx bodies). */
function errorMessage(status, statusText, body) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((e) => `${(e.loc || []).join(".")}: ${e.msg}`).join("; ");
  }
  return `HTTP ${status} ${statusText}`.trim();
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, errorMessage(response.status, response.statusText, data), data);
  return data;
}

export const getJSON = (path, params) => request("GET", withQuery(path, params));
export const postJSON = (path, body) => request("POST", path, body);

/** GET that answers `fallback` instead of throwing (for optional panels such as /readyz's 503). */
export async function tryGetJSON(path, params, fallback = null) {
  try {
    return await getJSON(path, params);
  } catch (err) {
    return err instanceof ApiError && err.body ? err.body : fallback;
  }
}
