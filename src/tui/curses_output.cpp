// SPDX-License-Identifier: Apache-2.0
#include "curses_output.h"

#include <ncursesw/ncurses.h>

#include <clocale>
#include <cstdio>

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
  return true;
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

void CursesOutput::invalidate() {
  previous_.reset();
  if (open_) clearok(stdscr, TRUE);
}

void CursesOutput::draw(const Canvas& cv) {
  if (!open_) return;
  if (previous_ && (cv.width() != previous_->width() || cv.height() != previous_->height())) {
    previous_.reset();
    erase();
  }
  // Only the changed part of each row goes to ncurses, already as wide characters (the canvas holds
  // code points; passing UTF-8 made ncurses decode every byte again): from the first to the last
  // cell that differs from the previous frame, one call per run of one style. ncurses then sends
  // the terminal only what differs from its own copy of the screen.
  const int width = cv.width();
  bool any = false;
  for (int r = 0; r < cv.height(); ++r) {
    const auto chars = cv.row_chars(r);
    const auto styles = cv.row_styles(r);
    int first = 0, last = width - 1;
    if (previous_) {
      const auto was_chars = previous_->row_chars(r);
      const auto was_styles = previous_->row_styles(r);
      const auto same = [&](int c) {
        const auto k = static_cast<std::size_t>(c);
        return chars[k] == was_chars[k] && styles[k] == was_styles[k];
      };
      while (first < width && same(first)) ++first;
      if (first == width) continue;
      while (last > first && same(last)) --last;
    }
    any = true;
    for (int c = first; c <= last;) {
      const Style style = styles[static_cast<std::size_t>(c)];
      wide_.clear();
      int e = c;
      for (; e <= last && styles[static_cast<std::size_t>(e)] == style; ++e)
        wide_.push_back(static_cast<wchar_t>(chars[static_cast<std::size_t>(e)]));
      attrset(attr_of(style, color_));
      mvaddnwstr(r, c, wide_.data(), static_cast<int>(wide_.size()));
      c = e;
    }
  }
  attrset(A_NORMAL);
  previous_ = cv;
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
