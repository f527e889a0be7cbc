// SPDX-License-Identifier: Apache-2.0
#include "trainmon/runner/python_hook.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "trainmon/web/assets.h"

namespace trainmon::runner {
namespace {

Error os_error(const std::string& what) {
  const int e = errno;
  return Error{ErrorDomain::os, e, "PYTHON_HOOK", fmt::format("{}: {}", what, std::strerror(e))};
}

Expected<void> make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return std::unexpected(os_error("creating " + path));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return std::unexpected(Error{ErrorDomain::os, EPERM, "PYTHON_HOOK", path + " is not our own directory"});
  return {};
}

Expected<void> write_new(const std::string& path, std::string_view data, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return std::unexpected(os_error("creating " + path));
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto e = os_error("writing " + path);
      ::close(fd);
      return std::unexpected(e);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return std::unexpected(os_error("writing " + path));
  return {};
}

}  // namespace

Expected<std::string> write_python_hook(const std::string& dir) {
  const std::string py = dir + "/py";
  if (auto r = make_dir(py); !r) return std::unexpected(r.error());
  if (auto r = make_dir(py + "/trainmon"); !r) return std::unexpected(r.error());
  bool has_hook = false;
  for (const auto& f : web::python_package_files()) {
    if (f.name.find("..") != std::string_view::npos) continue;  // names come from our own build
    // The C speedups (trainmon/_speedups.<EXT_SUFFIX>, docs/python.md): a shared object that the
    // interpreter maps executable, 0700; the .py files 0600.
    const mode_t mode = f.name.ends_with(".so") ? 0700 : 0600;
    if (auto r = write_new(py + "/" + std::string(f.name), f.data, mode); !r)
      return std::unexpected(r.error());
    has_hook = has_hook || f.name == "sitecustomize.py";
  }
  if (!has_hook)
    return std::unexpected(
        Error{ErrorDomain::os, ENOENT, "PYTHON_HOOK", "this build has no sitecustomize.py"});
  return py;
}

std::vector<std::pair<std::string, std::string>> python_hook_environment(const std::string& py_dir,
                                                                         const std::string& current) {
  return {{"PYTHONPATH", current.empty() ? py_dir : py_dir + ":" + current}, {kEnvAuto, "1"}};
}

}  // namespace trainmon::runner
