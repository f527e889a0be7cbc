// SPDX-License-Identifier: Apache-2.0
#include "cli/parse_errors.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "trainmon/core/i18n.h"

namespace trainmon::cli {
namespace {

/// The values of `text` read through `frame` (a CLI11 sentence with {0}, {1}, {2} where it puts its
/// data), by placeholder number; nullopt when `text` is not that sentence. A value ends at the first
/// occurrence of the literal text after it (the last one at the end of `text`).
std::optional<std::vector<std::string>> read_frame(std::string_view frame, std::string_view text) {
  std::vector<std::string> values(3);
  std::size_t used = 0;
  std::size_t f = 0, t = 0;
  int pending = -1;  // the placeholder whose value runs until the next literal
  while (f <= frame.size()) {
    const std::size_t open = frame.find('{', f);
    const std::string_view lit =
        frame.substr(f, open == std::string_view::npos ? std::string_view::npos : open - f);
    const bool last = open == std::string_view::npos;
    if (pending < 0) {
      if (text.substr(t, lit.size()) != lit) return std::nullopt;
    } else {
      std::size_t at = 0;
      if (last) {
        if (text.size() < t + lit.size() || text.substr(text.size() - lit.size()) != lit) return std::nullopt;
        at = text.size() - lit.size();
      } else {
        at = lit.empty() ? std::string_view::npos : text.find(lit, t);
        if (at == std::string_view::npos) return std::nullopt;
      }
      if (at <= t) return std::nullopt;  // a value is never empty
      values[static_cast<std::size_t>(pending)] = std::string(text.substr(t, at - t));
      t = at;
    }
    t += lit.size();
    if (last) break;
    const std::size_t close = frame.find('}', open);
    pending = close == open + 1 ? static_cast<int>(used) : frame[open + 1] - '0';  // "{}": the next one
    used = std::max(used, static_cast<std::size_t>(pending) + 1);
    f = close + 1;
  }
  if (t != text.size()) return std::nullopt;
  values.resize(used);
  return values;
}

std::string translated(std::string_view frame, const std::vector<std::string>& v) {
  switch (v.size()) {
    case 0: return std::string(i18n::tr(frame));
    case 1: return i18n::trf(frame, v[0]);
    case 2: return i18n::trf(frame, v[0], v[1]);
    default: return i18n::trf(frame, v[0], v[1], v[2]);
  }
}

template <std::size_t N>
std::optional<std::string> through(const std::array<std::string_view, N>& frames, std::string_view text) {
  return reframed(frames, text);
}

// CLI11 2.1's sentences (Error.hpp), by exception type.
constexpr std::array<std::string_view, 2> kExtras{
    N_("The following argument was not expected: {0}"),
    N_("The following arguments were not expected: {0}"),
};
constexpr std::array<std::string_view, 4> kConversion{
    N_("Could not convert: {0} = {1}"),
    N_("The value {0} is not an allowed value for {1}"),
    N_("{0}: Should be true/false or a number"),
    N_("{0}: too many inputs for a flag"),
};
constexpr std::array<std::string_view, 6> kMismatch{
    N_("{0}: {1} required {2} missing"),
    N_("{0}: At least {1} required but received {2}"),
    N_("{0}: At Most {1} required but received {2}"),
    N_("Expected exactly {1} arguments to {0}, got {2}"),
    N_("Expected at least {1} arguments to {0}, got {2}"),
    N_("{0} was given a disallowed flag override"),
};
constexpr std::array<std::string_view, 2> kRequired{
    N_("A subcommand is required"),
    N_("{0} is required"),
};
constexpr std::array<std::string_view, 1> kRequires{N_("{0} requires {1}")};
constexpr std::array<std::string_view, 1> kExcludes{N_("{0} excludes {1}")};
constexpr std::array<std::string_view, 1> kFile{N_("{0} was not readable (missing?)")};
// What CLI11's own validators say (Validators.hpp); a ValidationError is "OPTION: that". trainmon's
// validators (option_checks.h) say theirs translated already.
constexpr std::array<std::string_view, 9> kValidators{
    N_("Value {0} not in range {1} to {2}"),
    N_("Value {0} could not be converted"),
    N_("Failed parsing {0} as a {1}"),
    N_("Directory does not exist: {0}"),
    N_("Directory is actually a file: {0}"),
    N_("File does not exist: {0}"),
    N_("File is actually a directory: {0}"),
    N_("Path does not exist: {0}"),
    N_("{0} not in {1}"),
};

std::optional<std::string> translate(const CLI::Error& e) {
  const std::string_view what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) return through(kExtras, what);
  if (dynamic_cast<const CLI::ConversionError*>(&e)) return through(kConversion, what);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) return through(kMismatch, what);
  if (dynamic_cast<const CLI::RequiredError*>(&e)) return through(kRequired, what);
  if (dynamic_cast<const CLI::RequiresError*>(&e)) return through(kRequires, what);
  if (dynamic_cast<const CLI::ExcludesError*>(&e)) return through(kExcludes, what);
  if (dynamic_cast<const CLI::FileError*>(&e)) return through(kFile, what);
  if (dynamic_cast<const CLI::ValidationError*>(&e)) {
    // "OPTION: what the validator said" (option names hold no ": ")
    const std::size_t colon = what.find(": ");
    if (colon == std::string_view::npos) return std::nullopt;
    const std::string_view said = what.substr(colon + 2);
    if (auto t = through(kValidators, said)) return std::string(what.substr(0, colon + 2)) + *t;
    return std::nullopt;  // trainmon's own validator: already in the chosen language
  }
  return std::nullopt;
}

// The run store's sentences (src/store/store_open.cpp, store_runs.cpp), for said().
constexpr std::array<std::string_view, 10> kStore{
    N_("no run store at {} (nothing recorded yet? `trainmon run -- CMD` records one)"),
    N_("{} is not a trainmon run store (not a SQLite database); it was left untouched: move it aside or pass "
       "another --db"),
    N_("the run store path {} is a directory"),
    N_("cannot create the run store {}: directory {} is not writable ({})"),
    N_("cannot create the run store directory {}: {}"),
    N_("cannot open the run store {}: {}"),
    N_("cannot write to the run store {}: {}"),
    N_("no runs recorded yet"),
    N_("no run with id or name '{}' (see `trainmon runs`)"),
    N_("the name '{}' matches runs {}; give the id"),
};
// A Prometheus base URL refused (src/cluster/prometheus_client.cpp normalize_base_url).
constexpr std::array<std::string_view, 5> kUrl{
    N_("the URL has a space or a control character"),
    N_("the URL must start with http:// or https://"),
    N_("the URL names no host"),
    N_("the URL must not have a query or fragment (give the server's base URL)"),
    N_("the URL's port '{}' is not a number from 1 to 65535"),
};

}  // namespace

std::optional<std::string> reframed(std::span<const std::string_view> frames, std::string_view text) {
  for (const std::string_view frame : frames)
    if (auto v = read_frame(frame, text)) return translated(frame, *v);
  return std::nullopt;
}

std::string said(const Error& e) {
  if (i18n::language().empty()) return e.message;
  if (auto t = reframed(e.domain == ErrorDomain::store ? std::span<const std::string_view>(kStore)
                                                       : std::span<const std::string_view>(kUrl),
                        e.message))
    return *t;
  return e.message;
}

std::string parse_error_message(const CLI::Error& e) {
  if (i18n::language().empty()) return e.what();
  return translate(e).value_or(e.what());
}

std::string failure_message(const CLI::App* app, const CLI::Error& e) {
  // An error in a command's options names the command, as the command's own messages do
  // ("trainmon usage: --by: 1 required TEXT missing"); one before any command is CLI11's alone.
  std::string out;
  if (const auto subs = app->get_subcommands(); !subs.empty())
    out = "trainmon " + subs.back()->get_name() + ": ";
  out += parse_error_message(e) + "\n";
  std::vector<std::string> names;
  if (app->get_help_ptr() != nullptr) names.push_back(app->get_help_ptr()->get_name());
  if (app->get_help_all_ptr() != nullptr) names.push_back(app->get_help_all_ptr()->get_name());
  if (!names.empty())
    out += i18n::trf("Run with {} for more information.\n", CLI::detail::join(names, " or "));
  return out;
}

}  // namespace trainmon::cli
