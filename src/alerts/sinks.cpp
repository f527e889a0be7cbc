// SPDX-License-Identifier: Apache-2.0
#include "trainmon/alerts/sinks.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "trainmon/alerts/template.h"
#include "trainmon/core/i18n.h"
#include "trainmon/core/text_escape.h"
#include "trainmon/net/curl_library.h"
#include "trainmon/runner/launcher.h"

extern char** environ;

namespace trainmon::alerts {

namespace {

Error fail(std::string msg) {
  return Error{ErrorDomain::os, 0, "EIO", std::move(msg)};
}

class LogSink final : public Sink {
 public:
  explicit LogSink(std::string tool) : tool_(std::move(tool)) {}
  Expected<void> deliver(const Notification& n) override {
    std::fprintf(stderr, "trainmon %s: alert: %s\n", tool_.c_str(), text::terminal(n.summary()).c_str());
    return {};
  }

 private:
  std::string tool_;
};

class CommandSink final : public Sink {
 public:
  explicit CommandSink(SinkConfig c) : c_(std::move(c)) {}
  Expected<void> deliver(const Notification& n) override {
    std::vector<std::string> env_strings;
    for (char** e = environ; e && *e; ++e)
      if (std::strncmp(*e, "TRAINMON_ALERT_", 15) != 0) env_strings.emplace_back(*e);
    auto vars = template_vars(n);
    auto add = [&](const char* k, const std::string& v) {
      env_strings.push_back(fmt::format("TRAINMON_ALERT_{}={}", k, v));
    };
    add("ID", n.id);
    add("STATE", n.state);
    add("RULE", n.rule);
    add("SEVERITY", n.severity);
    add("TARGET", n.target);
    add("METRIC", n.metric);
    add("VALUE", vars["value"]);
    add("CONDITION", n.condition);
    add("MESSAGE", n.message);
    add("SUMMARY", n.summary());
    add("HOST", n.hostname);
    add("TOOL", n.tool);
    add("RUN_ID", vars["run_id"]);
    add("RUN_NAME", n.run_name);
    add("TIME", vars["time"]);
    add("TIME_UNIX_NS", fmt::format("{}", n.time_unix_ns));
    add("SUPPRESSED", fmt::format("{}", n.suppressed));
    add("JSON", text::json_dump(nlohmann::json(n)));
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = c_.command;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGTERM);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    // An owned child: the recorder's reaper (run, record and serve reap orphans) leaves it to us.
    int rc = 0;
    const pid_t pid = runner::spawn_owned_child([&] {
      pid_t p = 0;
      rc = posix_spawnp(&p, argv[0], &fa, &attr, argv.data(), envp.data());
      return rc == 0 ? p : pid_t{0};
    });
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
      return std::unexpected(fail(fmt::format("cannot start {}: {}", c_.command[0], std::strerror(rc))));
    struct Release {
      pid_t pid;
      ~Release() { runner::release_owned_child(pid); }
    } release{pid};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(c_.timeout_s);
    int status = 0;
    for (;;) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR)
        return std::unexpected(fail(fmt::format("waitpid: {}", std::strerror(errno))));
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return std::unexpected(
            fail(fmt::format("{} did not finish within {} s", c_.command[0], c_.timeout_s)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    if (WIFEXITED(status))
      return std::unexpected(
          fail(fmt::format("{} exited with status {}", c_.command[0], WEXITSTATUS(status))));
    return std::unexpected(fail(fmt::format("{} was killed by signal {}", c_.command[0], WTERMSIG(status))));
  }

 private:
  SinkConfig c_;
};

std::size_t discard(char*, std::size_t size, std::size_t n, void*) {
  return size * n;
}

struct Upload {
  const std::string* data;
  std::size_t off = 0;
};
std::size_t read_upload(char* buf, std::size_t size, std::size_t n, void* p) {
  auto* u = static_cast<Upload*>(p);
  std::size_t len = std::min(size * n, u->data->size() - u->off);
  std::memcpy(buf, u->data->data() + u->off, len);
  u->off += len;
  return len;
}

class WebhookSink final : public Sink {
 public:
  explicit WebhookSink(SinkConfig c) : c_(std::move(c)) {}
  Expected<void> deliver(const Notification& n) override {
    std::string body = webhook_body(n, c_.slack);
    auto lib = net::curl_library();
    if (!lib) return std::unexpected(lib.error());
    const net::CurlLibrary& curl = **lib;
    CURL* h = curl.easy_init();
    if (!h) return std::unexpected(fail("curl_easy_init failed"));
    curl_slist* headers = curl.slist_append(nullptr, "Content-Type: application/json");
    curl.easy_setopt(h, CURLOPT_URL, c_.url.c_str());
    curl.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(c_.timeout_s * 1000));
    curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c_.timeout_s * 1000));
    curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl.easy_setopt(h, CURLOPT_USERAGENT, "trainmon-alerts");
    if (!c_.ca_file.empty()) curl.easy_setopt(h, CURLOPT_CAINFO, c_.ca_file.c_str());
    CURLcode rc = curl.easy_perform(h);
    long code = 0;
    curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl.slist_free_all(headers);
    curl.easy_cleanup(h);
    if (rc != CURLE_OK)
      return std::unexpected(fail(fmt::format("POST {}: {}", c_.url, curl.easy_strerror(rc))));
    if (code < 200 || code > 299) return std::unexpected(fail(fmt::format("POST {}: HTTP {}", c_.url, code)));
    return {};
  }

 private:
  SinkConfig c_;
};

class EmailSink final : public Sink {
 public:
  explicit EmailSink(SinkConfig c) : c_(std::move(c)) {}
  Expected<void> deliver(const Notification& n) override {
    auto cred = smtp_credentials(c_);
    if (!cred) return std::unexpected(cred.error());
    std::string msg = email_message(n, c_);
    Upload up{&msg};
    auto lib = net::curl_library();
    if (!lib) return std::unexpected(lib.error());
    const net::CurlLibrary& curl = **lib;
    CURL* h = curl.easy_init();
    if (!h) return std::unexpected(fail("curl_easy_init failed"));
    curl_slist* rcpt = nullptr;
    for (const auto& t : c_.to) rcpt = curl.slist_append(rcpt, fmt::format("<{}>", t).c_str());
    std::string from = fmt::format("<{}>", c_.from);
    curl.easy_setopt(h, CURLOPT_URL, c_.url.c_str());
    curl.easy_setopt(h, CURLOPT_MAIL_FROM, from.c_str());
    curl.easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
    curl.easy_setopt(h, CURLOPT_READFUNCTION, read_upload);
    curl.easy_setopt(h, CURLOPT_READDATA, &up);
    curl.easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(c_.timeout_s * 1000));
    curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(c_.timeout_s * 1000));
    curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    long ssl = c_.starttls == "off"   ? CURLUSESSL_NONE
               : c_.starttls == "try" ? CURLUSESSL_TRY
                                      : CURLUSESSL_ALL;
    curl.easy_setopt(h, CURLOPT_USE_SSL, ssl);
    if (!c_.ca_file.empty()) curl.easy_setopt(h, CURLOPT_CAINFO, c_.ca_file.c_str());
    if (!cred->first.empty()) {
      curl.easy_setopt(h, CURLOPT_USERNAME, cred->first.c_str());
      curl.easy_setopt(h, CURLOPT_PASSWORD, cred->second.c_str());
    }
    CURLcode rc = curl.easy_perform(h);
    curl.slist_free_all(rcpt);
    curl.easy_cleanup(h);
    if (rc != CURLE_OK)
      return std::unexpected(fail(fmt::format("SMTP {}: {}", c_.url, curl.easy_strerror(rc))));
    return {};
  }

 private:
  SinkConfig c_;
};

}  // namespace

std::string encode_header_words(std::string_view value) {
  const bool ascii = std::all_of(value.begin(), value.end(), [](char ch) {
    const auto u = static_cast<unsigned char>(ch);
    return u >= 0x20 && u < 0x7f;
  });
  if (ascii) return std::string(value);
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  auto b64 = [](std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 3) {
      std::uint32_t v = static_cast<unsigned char>(in[i]) << 16;
      if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
      if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
      out += kB64[(v >> 18) & 63];
      out += kB64[(v >> 12) & 63];
      out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
      out += i + 2 < in.size() ? kB64[v & 63] : '=';
    }
    return out;
  };
  // RFC 2047: encoded words of at most 75 characters ("=?UTF-8?B?" + 60 + "?="), each holding whole
  // UTF-8 characters (45 bytes at most), folded onto continuation lines. Control bytes become spaces.
  std::string out;
  std::size_t i = 0;
  while (i < value.size()) {
    std::size_t end = std::min(value.size(), i + 45);
    while (end < value.size() && end > i && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
    if (end == i) end = std::min(value.size(), i + 45);  // not UTF-8: cut anyway
    std::string chunk(value.substr(i, end - i));
    for (char& ch : chunk)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
    if (!out.empty()) out += "\r\n ";
    out += "=?UTF-8?B?" + b64(chunk) + "?=";
    i = end;
  }
  return out;
}

std::string webhook_body(const Notification& n, bool slack) {
  nlohmann::json j = n;
  if (slack) {
    const char* icon = n.state == "resolved"      ? ":white_check_mark:"
                       : n.severity == "critical" ? ":rotating_light:"
                                                  : ":warning:";
    j = nlohmann::json{{"text", fmt::format("{} {}", icon, n.summary())}, {"trainmon", j}};
  }
  return text::json_dump(j);
}

std::string email_message(const Notification& n, const SinkConfig& c) {
  std::time_t secs = static_cast<std::time_t>(n.time_unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm);
  std::string to;
  for (const auto& t : c.to) to += (to.empty() ? "" : ", ") + t;
  const std::string_view what = n.state == "resolved" ? i18n::tr("RESOLVED")
                                : n.state == "test"   ? i18n::tr("TEST")
                                                      : i18n::tr(n.severity);
  std::string subject = i18n::trf("[trainmon] {} {} {} on {}", what, n.rule, n.target, n.hostname);
  std::string body = n.summary() + "\r\n\r\n";
  for (const auto& [k, v] : template_vars(n)) body += fmt::format("{}: {}\r\n", k, v);
  // dot-stuffing is done by curl; bare LFs are normalised here
  std::string text;
  for (char ch : body) {
    if (ch == '\n' && (text.empty() || text.back() != '\r')) text += '\r';
    text += ch;
  }
  return fmt::format(
      "Date: {}\r\nFrom: {}\r\nTo: {}\r\nSubject: {}\r\nMessage-ID: <{}@trainmon>\r\nX-Trainmon-Alert-Id: "
      "{}\r\n"
      "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{}",
      date, c.from, to, encode_header_words(subject), n.id, n.id, text);
}

Expected<std::pair<std::string, std::string>> smtp_credentials(const SinkConfig& c) {
  const char* u = std::getenv("TRAINMON_SMTP_USER");
  const char* p = std::getenv("TRAINMON_SMTP_PASSWORD");
  if (u && *u) return std::pair<std::string, std::string>{u, p ? p : ""};
  if (c.credentials_file.empty()) return std::pair<std::string, std::string>{};
  std::string path = c.credentials_file;
  if (path.starts_with("~/"))
    if (const char* home = std::getenv("HOME")) path = std::string(home) + path.substr(1);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return std::unexpected(fail(fmt::format("SMTP credentials file {}: {}", path, std::strerror(errno))));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
    return std::unexpected(
        fail(fmt::format("SMTP credentials file {} refused: it must be a regular file owned by you and "
                         "readable only by you (chmod 600)",
                         path)));
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  auto colon = line.find(':');
  if (colon == std::string::npos)
    return std::unexpected(
        fail(fmt::format("SMTP credentials file {}: the first line must be user:password", path)));
  return std::pair<std::string, std::string>{line.substr(0, colon), line.substr(colon + 1)};
}

std::unique_ptr<Sink> make_sink(const SinkConfig& c, const std::string& tool) {
  switch (c.type) {
    case SinkType::log: return std::make_unique<LogSink>(tool);
    case SinkType::command: return std::make_unique<CommandSink>(c);
    case SinkType::webhook: return std::make_unique<WebhookSink>(c);
    case SinkType::email: return std::make_unique<EmailSink>(c);
  }
  return std::make_unique<LogSink>(tool);
}

}  // namespace trainmon::alerts
