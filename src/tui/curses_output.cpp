// SPDX-License-Identifier: Apache-2.0
#include "curses_output.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <ncursesw/ncurses.h>

#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <iterator>

#include "trainmon/tui/keys.h"

namespace trainmon::tui {

namespace {

constexpr int kPairs = 10;

attr_t attr_of(Style s, bool color) {
  const auto pair = [&](int n) { return color ? COLOR_PAIR(n) : A_NORMAL; };
  switch (s) {
    case Style::normal: return A_NORMAL;
    case Style::title: return color ? pair(1) | A_BOLD : A_REVERSE;
    case Style::header: return color ? pair(2) : A_REVERSE;
    case Style::label: return color ? pair(3) : A_BOLD;
    case Style::good: return pair(4);
    case Style::busy: return pair(4) | A_BOLD;
    case Style::warn: return pair(5) | A_BOLD;
    case Style::bad: return pair(6) | A_BOLD;
    case Style::dim: return color ? pair(7) | A_DIM : A_DIM;
    case Style::selected: return color ? pair(8) : A_REVERSE;
    case Style::dialog: return color ? pair(9) : A_REVERSE;
  }
  return A_NORMAL;
}

}  // namespace

CursesOutput::~CursesOutput() {
  close();
}

bool CursesOutput::open(bool color, std::string& error) {
  std::setlocale(LC_ALL, "");
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (!screen) {
    error = "cannot drive this terminal (no terminfo entry for $TERM?): printing the status view";
    return false;
  }
  screen_ = screen;
  open_ = true;
  // ncurses 6.4 flushes its output after every cursor movement until the screen has been through one
  // endwin() and refresh() (its "initial" state, meant for low-level terminfo programs): about 65
  // write(2) calls a frame instead of one or two, the largest cost of a frame. One cycle here, before
  // anything is drawn and before the modes below are set, puts it in its running state.
  endwin();
  refresh();
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  // No typeahead check while updating: ncurses would poll the terminal for pending input during every
  // refresh (a system call per batch of lines); keys are read by the poll() loop anyway.
  typeahead(-1);
  color_ = color && has_colors();
  if (color_) {
    start_color();
    use_default_colors();
    init_pair(1, COLOR_BLACK, COLOR_CYAN);   // title
    init_pair(2, COLOR_BLACK, COLOR_GREEN);  // header
    init_pair(3, COLOR_CYAN, -1);            // label
    init_pair(4, COLOR_GREEN, -1);           // good / busy
    init_pair(5, COLOR_YELLOW, -1);          // warn
    init_pair(6, COLOR_RED, -1);             // bad
    init_pair(7, COLOR_WHITE, -1);           // dim
    init_pair(8, COLOR_BLACK, COLOR_CYAN);   // selected
    init_pair(9, COLOR_WHITE, COLOR_BLUE);   // dialog
    static_assert(kPairs == 10);
  }
  setup_direct();
  return true;
}

namespace {

/// A string capability of the terminal, or nullptr (absent, or not a string capability).
const char* capability(const char* name) {
  const char* s = tigetstr(name);
  return s == reinterpret_cast<const char*>(-1) ? nullptr : s;
}

}  // namespace

/// `text` without terminfo padding ("$<5>", "$<2*/>": delays for tputs to send as pad characters,
/// which terminal emulators do not need).
void append_unpadded(std::string& out, const char* text) {
  if (!text) return;
  for (const char* p = text; *p;) {
    if (p[0] == '$' && p[1] == '<') {
      const char* e = p + 2;
      while (*e && ((*e >= '0' && *e <= '9') || *e == '.' || *e == '*' || *e == '/')) ++e;
      if (*e == '>') {
        p = e + 1;
        continue;
      }
    }
    out.push_back(*p++);
  }
}

namespace {

/// Calls fn(row, first, last) for each run of cells of `now` that differ from `was` (same size),
/// runs less than `gap` equal cells apart taken together (a cursor movement, or a call into ncurses,
/// costs about as much as writing a few cells).
template <typename Fn>
void for_each_changed_run(const Canvas& now, const Canvas& was, int gap, Fn&& fn) {
  const int width = now.width();
  for (int r = 0; r < now.height(); ++r) {
    const auto chars = now.row_chars(r);
    const auto styles = now.row_styles(r);
    const auto was_chars = was.row_chars(r);
    const auto was_styles = was.row_styles(r);
    const auto same = [&](int c) {
      const auto k = static_cast<std::size_t>(c);
      return chars[k] == was_chars[k] && styles[k] == was_styles[k];
    };
    int c = 0;
    while (c < width) {
      while (c < width && same(c)) ++c;
      if (c == width) break;
      int last = c;
      for (int e = c + 1; e < width && e - last <= gap; ++e)
        if (!same(e)) last = e;
      fn(r, c, last);
      c = last + 1;
    }
  }
}

/// What attr_of() asks ncurses for, as terminfo pieces: colours (-1: the terminal's default) and
/// attributes.
struct Look {
  short fg = -1, bg = -1;
  bool bold = false, dim = false, reverse = false;
};

Look look_of(Style s, bool color) {
  if (!color) {
    switch (s) {
      case Style::title:
      case Style::header:
      case Style::selected:
      case Style::dialog: return {-1, -1, false, false, true};
      case Style::label:
      case Style::busy:
      case Style::warn:
      case Style::bad: return {-1, -1, true, false, false};
      case Style::dim: return {-1, -1, false, true, false};
      case Style::normal:
      case Style::good: return {};
    }
    return {};
  }
  switch (s) {
    case Style::normal: return {};
    case Style::title: return {COLOR_BLACK, COLOR_CYAN, true, false, false};
    case Style::header: return {COLOR_BLACK, COLOR_GREEN, false, false, false};
    case Style::label: return {COLOR_CYAN, -1, false, false, false};
    case Style::good: return {COLOR_GREEN, -1, false, false, false};
    case Style::busy: return {COLOR_GREEN, -1, true, false, false};
    case Style::warn: return {COLOR_YELLOW, -1, true, false, false};
    case Style::bad: return {COLOR_RED, -1, true, false, false};
    case Style::dim: return {COLOR_WHITE, -1, false, true, false};
    case Style::selected: return {COLOR_BLACK, COLOR_CYAN, false, false, false};
    case Style::dialog: return {COLOR_WHITE, COLOR_BLUE, false, false, false};
  }
  return {};
}

}  // namespace

void CursesOutput::setup_direct() {
  // Frames are written with the terminal's own terminfo strings (cursor_address, the attribute and
  // colour strings), computed once here, from the cells that changed since the previous frame. That
  // skips ncurses' screen update: its three copies of the screen (stdscr, newscr, curscr: 28 bytes
  // a cell, 840 KB at 200x50) were copied, hashed and compared on every frame, about half the
  // drawing thread's CPU time at one frame a second, when the caches are cold. ncurses still sets
  // the terminal up and down, and reads the keys. Without cursor_address, exit_attribute_mode,
  // clear_screen or (with colours) set_a_foreground/background, ncurses draws (draw_curses).
  const char* cup = capability("cup");
  const char* sgr0 = capability("sgr0");
  const char* clear = capability("clear");
  const char* setaf = capability("setaf");
  const char* setab = capability("setab");
  direct_ = cup && sgr0 && clear && (!color_ || (setaf && setab));
  if (!direct_) return;
  cup_ = cup;
  ansi_cup_ = cup_ == "\x1b[%i%p1%d;%p2%dH";
  clear_.clear();
  append_unpadded(clear_, clear);
  std::string reset;
  append_unpadded(reset, sgr0);
  if (color_) append_unpadded(reset, capability("op"));
  const char* bold = capability("bold");
  const char* dim = capability("dim");
  const char* rev = capability("rev");
  for (int i = 0; i < kStyles; ++i) {
    const Look l = look_of(static_cast<Style>(i), color_);
    std::string& seq = style_seq_[static_cast<std::size_t>(i)];
    seq = reset;
    if (l.bold) append_unpadded(seq, bold);
    if (l.dim) append_unpadded(seq, dim);
    if (l.reverse) append_unpadded(seq, rev);
    if (l.fg >= 0) append_unpadded(seq, tiparm(setaf, static_cast<int>(l.fg)));
    if (l.bg >= 0) append_unpadded(seq, tiparm(setab, static_cast<int>(l.bg)));
  }
  // Writing the bottom-right cell scrolls a terminal with automatic margins unless it has the
  // newline glitch (xterm, screen and tmux have it): leave that cell alone on the others.
  skip_last_cell_ = tigetflag("am") == 1 && tigetflag("xenl") != 1;
}

void CursesOutput::close() {
  if (!open_) return;
  open_ = false;
  endwin();
  delscreen(static_cast<SCREEN*>(screen_));
  screen_ = nullptr;
}

int CursesOutput::columns() const {
  return open_ ? COLS : 0;
}
int CursesOutput::rows() const {
  return open_ ? LINES : 0;
}

void CursesOutput::suspend() {
  if (open_) endwin();
}

void CursesOutput::resume() {
  if (!open_) return;
  refresh();  // back to program mode and the alternate screen
  invalidate();
}

void CursesOutput::invalidate() {
  previous_.reset();
  if (open_ && !direct_) clearok(stdscr, TRUE);
}

void CursesOutput::move_to(int row, int col) {
  if (ansi_cup_) {  // "\e[%i%p1%d;%p2%dH": formatted here, as tiparm would
    fmt::format_to(std::back_inserter(out_), FMT_COMPILE("\x1b[{};{}H"), row + 1, col + 1);
  } else {
    append_unpadded(out_, tiparm(cup_.c_str(), row, col));
  }
}

void CursesOutput::emit_range(const Canvas& cv, int row, int first, int last) {
  const int width = cv.width();
  const auto chars = cv.row_chars(row);
  const auto styles = cv.row_styles(row);
  const auto cell = [&](int c) { return chars[static_cast<std::size_t>(c)]; };
  // Whole double-width characters only: a run that starts on the right half of one starts on its
  // left half, one that ends on a left half takes the right half too.
  if (first > 0 && cell(first) == kWideTail) --first;
  if (last + 1 < width && cell(last + 1) == kWideTail) ++last;
  if (skip_last_cell_ && row == cv.height() - 1 && last == width - 1) {
    --last;
    if (last >= first && last + 1 < width && cell(last + 1) == kWideTail) --last;
  }
  if (last < first) return;
  move_to(row, first);
  for (int c = first; c <= last; ++c) {
    const char32_t cp = cell(c);
    if (cp == kWideTail) continue;  // drawn with its left half
    const Style style = styles[static_cast<std::size_t>(c)];
    if (style != current_style_) {
      out_ += style_seq_[static_cast<std::size_t>(style)];
      current_style_ = style;
    }
    if (cp < 0x80) {
      out_.push_back(static_cast<char>(cp));
      continue;
    }
    append_utf8(out_, cp);
    // A double-width character takes its cell and the next (the canvas holds kWideTail there). A
    // terminal whose width table says otherwise must not shift the rest of the row: the cursor is
    // placed again after it.
    if (c + 1 < width && cell(c + 1) == kWideTail && c + 2 <= last) move_to(row, c + 2);
  }
}

void CursesOutput::write_out() {
  std::size_t done = 0;
  while (done < out_.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, out_.data() + done, out_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // the terminal went away: the poll loop sees it
    }
    done += static_cast<std::size_t>(n);
  }
  out_.clear();
}

void CursesOutput::draw(Canvas cv) {
  if (!open_) return;
  if (!direct_) return draw_curses(std::move(cv));
  out_.clear();
  if (!previous_ || cv.width() != previous_->width() || cv.height() != previous_->height()) {
    // Everything again: clear the screen, then only what is not a blank normal cell.
    out_ += style_seq_[static_cast<std::size_t>(Style::normal)];
    out_ += clear_;
    current_style_ = Style::normal;
    previous_.emplace(cv.width(), cv.height(), cv.utf8());
  }
  // The cells that differ from the previous frame, in runs (runs less than 6 equal cells apart are
  // written as one: a cursor movement costs about as much).
  for_each_changed_run(cv, *previous_, 6,
                       [&](int r, int first, int last) { emit_range(cv, r, first, last); });
  if (!out_.empty() && current_style_ != Style::normal) {
    out_ += style_seq_[static_cast<std::size_t>(Style::normal)];  // as ncurses leaves it
    current_style_ = Style::normal;
  }
  write_out();
  previous_ = std::move(cv);
}

void CursesOutput::put_range(const Canvas& cv, int row, int first, int last) {
  const auto chars = cv.row_chars(row);
  const auto styles = cv.row_styles(row);
  const auto cell = [&](int c) { return chars[static_cast<std::size_t>(c)]; };
  if (first > 0 && cell(first) == kWideTail) --first;
  if (last + 1 < cv.width() && cell(last + 1) == kWideTail) ++last;
  for (int c = first; c <= last;) {
    const Style style = styles[static_cast<std::size_t>(c)];
    wide_.clear();
    int e = c;
    // One style run; the right half of a double-width character belongs to its left half's run
    // (ncurses moves two columns for it).
    for (; e <= last && (styles[static_cast<std::size_t>(e)] == style || cell(e) == kWideTail); ++e) {
      if (cell(e) != kWideTail) wide_.push_back(static_cast<wchar_t>(cell(e)));
    }
    attrset(attr_of(style, color_));
    mvaddnwstr(row, c, wide_.data(), static_cast<int>(wide_.size()));
    c = e;
  }
}

void CursesOutput::draw_curses(Canvas cv) {
  if (previous_ && (cv.width() != previous_->width() || cv.height() != previous_->height())) {
    previous_.reset();
    erase();
  }
  // Only the cells that differ from the previous frame go to ncurses, already as wide characters
  // (the canvas holds code points; passing UTF-8 made ncurses decode every byte again): each run of
  // changed cells, one call per style within it (runs less than 8 equal cells apart taken together). Every
  // cell handed over costs ncurses a wadd_wch (width, printability, the cell's copy) and the comparison with
  // its own copy of the screen; a GPU row changes in its bar, its figures and the newest sparkline column,
  // not in the 150 cells between them. ncurses then sends the terminal only what differs from what it shows.
  bool any = false;
  if (!previous_) {
    for (int r = 0; r < cv.height(); ++r) put_range(cv, r, 0, cv.width() - 1);
    any = cv.height() > 0;
  } else {
    for_each_changed_run(cv, *previous_, 8, [&](int r, int first, int last) {
      put_range(cv, r, first, last);
      any = true;
    });
  }
  attrset(A_NORMAL);
  previous_ = std::move(cv);
  if (any) refresh();
}

std::optional<int> CursesOutput::read_key() {
  if (!open_) return std::nullopt;
  wint_t ch = 0;
  const int rc = get_wch(&ch);
  if (rc == ERR) return std::nullopt;
  if (rc == KEY_CODE_YES) {
    switch (ch) {
      case KEY_UP: return kKeyUp;
      case KEY_DOWN: return kKeyDown;
      case KEY_PPAGE: return kKeyPageUp;
      case KEY_NPAGE: return kKeyPageDown;
      case KEY_HOME: return kKeyHome;
      case KEY_END: return kKeyEnd;
      case KEY_LEFT: return kKeyLeft;
      case KEY_RIGHT: return kKeyRight;
      case KEY_F(1): return kKeyF1;
      case KEY_F(9): return kKeyF9;
      case KEY_F(10): return kKeyF10;
      case KEY_RESIZE: return kKeyResize;
      case KEY_BACKSPACE: return kKeyBackspace;
      case KEY_ENTER: return kKeyEnter;
      default: return 0;
    }
  }
  if (ch == '\r') return kKeyEnter;
  if (ch == 8) return kKeyBackspace;
  return static_cast<int>(ch);
}

}  // namespace trainmon::tui
