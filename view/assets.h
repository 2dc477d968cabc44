#ifndef NKIGRAPH_VIEW_ASSETS_H_
#define NKIGRAPH_VIEW_ASSETS_H_

// The page's HTML template, style sheet and scripts (view/assets/),
// embedded in the binary at build time (view/embed_assets.cmake).

#include "absl/strings/string_view.h"

namespace nkigraph::view {

// The text of view/assets/<name> ("page.css", "main.js"), or empty for
// a name that is not an asset.
absl::string_view Asset(absl::string_view name);

}  // namespace nkigraph::view

#endif  // NKIGRAPH_VIEW_ASSETS_H_
