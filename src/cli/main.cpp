// SPDX-License-Identifier: Apache-2.0
// trainmon entry point: global options, subcommand dispatch, one place for exit statuses.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/arg_order.h"
#include "cli/command.h"
#include "cli/exit_codes.h"
#include "cli/help_export.h"
#include "cli/lazy_setup.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "cli/parse_errors.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/i18n_english.h"

namespace trainmon::cli {

std::vector<CommandSpec>& command_registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}

namespace {

/// What the root app's definition holds: the global options, the two that print and exit, and each
/// command's runner.
struct Definition {
  GlobalOptions global;
  std::string print_completion, print_man;
  std::map<CLI::App*, Runner> runners;
};

/// Defines trainmon's options and commands on `app`, their text in the language selected now
/// (descriptions, CLI11's labels, its help flag and error messages): the help and the errors follow
/// the language, the man pages and completions are made from a definition under i18n::EnglishScope.
/// Every command is added. With a command line (`argv`), only the command it names gets its options
/// and runner (lazy_setup.h), and its name is returned; without one, or when the line names none,
/// every command is set up and the result is empty.
std::string define(CLI::App& app, Definition& d, int argc = 0, const char* const* argv = nullptr) {
  // Before any option or command: commands inherit the labels, the groups' names and the error text.
  auto formatter = app.get_formatter();
  for (const char* label : {N_("Usage"), N_("OPTIONS"), N_("SUBCOMMAND"), N_("SUBCOMMANDS"), N_("REQUIRED"),
                            N_("Positionals"), N_("Env"), N_("Needs"), N_("Excludes")})
    formatter->label(label, tr(label));
  app.option_defaults()->group(tr("Options"));
  app.group(tr("Subcommands"));
  app.failure_message(failure_message);
  app.description(
      tr("trainmon: watch, record and diagnose deep-learning training jobs (GPUs, host, processes)"));
  app.set_help_flag("-h,--help", tr("Print this help message and exit"));
  app.set_version_flag("-V,--version", std::string("trainmon ") + TRAINMON_VERSION,
                       tr("Display program version information and exit"));
  app.require_subcommand(0, 1);
  app.fallthrough();

  GlobalOptions& global = d.global;
  app.add_option("--nvml-library", global.nvml_library,
                 tr("NVML library to load (default: $TRAINMON_NVML_LIBRARY, then libnvidia-ml.so.1)"));
  // A root that does not exist would silently read nothing (no host data, no job processes).
  app.add_option("--proc-root", global.proc_root, tr("procfs mount point to read host data from"))
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  app.add_option("--sys-root", global.sys_root, tr("sysfs mount point to read host data from"))
      ->capture_default_str()
      ->check(CLI::ExistingDirectory);
  // No existence check: a host without a kubelet has no such directory (no pod names, no error).
  app.add_option("--pod-logs-root", global.pod_logs_root,
                 tr("the kubelet's pod log directory, for pod and container names (default: "
                    "$TRAINMON_POD_LOGS_ROOT, then /var/log/pods)"));
  app.add_option("--lang", global.lang,
                 tr("language of messages: zh_CN or en (default: $TRAINMON_LANG, then $LANGUAGE, $LC_ALL, "
                    "$LC_MESSAGES, $LANG)"));

  app.add_option("--print-completion", d.print_completion,
                 tr("print the bash, zsh or fish completion script and exit"))
      ->check(one_of({"bash", "zsh", "fish"}));
  app.add_option("--print-man", d.print_man,
                 tr("write the man pages (trainmon.1, trainmon-COMMAND.1) into DIR and exit"));

  auto& registry = command_registry();
  std::stable_sort(registry.begin(), registry.end(),
                   [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
  std::string only;
  if (argv) {
    // The root's options that take a value, as spelled on a command line: their values are not
    // command names.
    std::vector<std::string> spelled;
    for (const CLI::Option* o : app.get_options()) {
      if (o->get_items_expected_max() == 0) continue;
      for (const std::string& n : o->get_lnames()) spelled.push_back("--" + n);
      for (const std::string& n : o->get_snames()) spelled.push_back("-" + n);
    }
    only = named_command(argc, argv, registry, std::vector<std::string_view>(spelled.begin(), spelled.end()));
  }
  for (auto& spec : registry) {
    CLI::App* sub = app.add_subcommand(spec.name, tr(spec.description));
    // CLI11 makes a command's help flag before it inherits the option group's name: again, in it.
    sub->set_help_flag("-h,--help", tr("Print this help message and exit"));
    if (only.empty() || spec.name == only) d.runners[sub] = spec.setup(*sub, global);
  }
  return only;
}

/// What a command line that does not parse gets: the message (or the help, the version) and the
/// exit status.
int report_parse_error(CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // A mistyped command: "trainmon stauts" gets "did you mean", as git does.
    for (const std::string& extra : app.remaining()) {
      if (!app.get_subcommands().empty()) break;  // extras of a command: CLI11's own message
      if (extra.empty() || extra[0] == '-') continue;
      const std::string near = nearest_subcommand(app, extra);
      std::fputs(
          (near.empty() ? trainmon::i18n::trf("trainmon: '{}' is not a trainmon command. See 'trainmon "
                                              "--help'.\n",
                                              extra)
                        : trainmon::i18n::trf("trainmon: '{}' is not a trainmon command. Did you mean "
                                              "'{}'? See 'trainmon --help'.\n",
                                              extra, near))
              .c_str(),
          stderr);
      return kExitUsage;
    }
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  int rc = app.exit(e);  // --help, --version: printed to stdout, which may be a closed pipe
  return finish_stdout(rc == 0 ? kExitOk : kExitUsage, "help");
}

constexpr int kParseOk = -1;     ///< parsed: run the command
constexpr int kParseRetry = -2;  ///< a lazy definition did not parse the line: parse it with every command

/// Parses the command line into `app` (defined into `d`): kParseOk, or an exit status after the
/// message (help, version, a usage error); for a definition with one command set up (`lazy`),
/// kParseRetry instead of any of these, and when the line names another command.
int parse_command_line(CLI::App& app, const Definition& d, int argc, char** argv, bool lazy) {
  // A command's options before the command (`trainmon --db FILE runs`) go after it (arg_order.h).
  std::vector<std::string> arg_words(argv + 1, argv + argc);
  arg_words = command_options_after_command(app, std::move(arg_words));
  std::vector<char*> arg_ptrs{argv[0]};
  for (auto& w : arg_words) arg_ptrs.push_back(w.data());
  arg_ptrs.push_back(nullptr);
  argv = arg_ptrs.data();

  // nvidia-smi spells the query loop in milliseconds "-lms MS"; CLI11 takes no multi-letter option
  // after a single dash, so after the `query` subcommand that one token (alone or as "-lms=MS")
  // becomes "--lms" before parsing.
  static char lms_long[] = "--lms";
  std::vector<std::string> lms_joined;
  lms_joined.reserve(static_cast<std::size_t>(argc));
  bool in_query = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (!in_query) {
      in_query = a == "query";
    } else if (a == "-lms") {
      argv[i] = lms_long;
    } else if (a.starts_with("-lms=")) {
      argv[i] = lms_joined.emplace_back("-" + std::string(a)).data();
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // The full definition says what is wrong, and prints the help (`--db top runs --help` names top
    // first, but asks for runs' help, which only the full definition has).
    if (lazy) return kParseRetry;
    return report_parse_error(app, e);
  }
  if (lazy) {
    for (const CLI::App* sub : app.get_subcommands()) {
      if (!d.runners.count(const_cast<CLI::App*>(sub))) return kParseRetry;
    }
  }
  return kParseOk;
}

}  // namespace
}  // namespace trainmon::cli

int main(int argc, char** argv) {
  using namespace trainmon::cli;
  catch_sigpipe();  // a closed pipe ends us quietly (cli/output.h), not by SIGPIPE
  // The language before any text is made (the help included): --lang is read here, ahead of the
  // parser, which only accepts it (core/i18n.h).
  std::string_view lang_arg;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--lang" && i + 1 < argc) lang_arg = argv[i + 1];
    if (a.starts_with("--lang=")) lang_arg = a.substr(7);
  }
  trainmon::i18n::init(lang_arg);
  // Only the command the line names is set up (its options defined): the others' cost ~0.7 ms of
  // every start; a line that does not parse so is parsed again with every command (lazy_setup.h).
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  auto app = std::make_unique<CLI::App>();
  auto def = std::make_unique<Definition>();
  const std::string named = define(*app, *def, argc, argv);
  int parsed = parse_command_line(*app, *def, argc, args.data(), !named.empty());
  if (parsed == kParseRetry) {
    args.assign(argv, argv + argc);
    args.push_back(nullptr);
    app = std::make_unique<CLI::App>();
    def = std::make_unique<Definition>();
    define(*app, *def);
    parsed = parse_command_line(*app, *def, argc, args.data(), false);
  }
  if (parsed != kParseOk) return parsed;
  GlobalOptions& global = def->global;
  auto& runners = def->runners;
  if (!def->print_completion.empty() || !def->print_man.empty()) {
    // Generated files: English whatever the locale (a second definition, made in English; what
    // goes wrong writing them is said in the chosen language).
    CLI::App english;
    Definition english_def;
    {
      const trainmon::i18n::EnglishScope in_english;
      define(english, english_def);
    }
    if (!def->print_completion.empty()) {
      std::fputs(completion_script(english, def->print_completion).c_str(), stdout);
      return kExitOk;
    }
    return write_man_pages(english, def->print_man, TRAINMON_VERSION) ? kExitOk : kExitFailure;
  }
  if (global.nvml_library.size()) ::setenv("TRAINMON_NVML_LIBRARY", global.nvml_library.c_str(), 1);

  try {
    for (auto& [sub, runner] : runners) {
      if (sub->parsed()) return finish_stdout(runner(), sub->get_name().c_str());
    }
    // No subcommand: the live dashboard (top) when stdout is a terminal whose TERM can be driven;
    // otherwise status, as before.
    const char* term = std::getenv("TERM");
    const bool usable_tty = ::isatty(STDOUT_FILENO) == 1 && ::isatty(STDIN_FILENO) == 1 && term && *term &&
                            std::string_view(term) != "dumb";
    const std::string_view fallback = usable_tty ? "top" : "status";
    for (auto& [sub, runner] : runners) {
      if (sub->get_name() == fallback) return finish_stdout(runner(), sub->get_name().c_str());
    }
    std::fputs(app->help().c_str(), stdout);
    return finish_stdout(kExitOk, "help");
  } catch (const std::exception& e) {
    std::fputs(trainmon::i18n::trf("trainmon: internal error: {}\n", e.what()).c_str(), stderr);
    return kExitFailure;
  }
}
