#ifndef NKIGRAPH_UTIL_PROGRESS_TEXT_H_
#define NKIGRAPH_UTIL_PROGRESS_TEXT_H_

#include <cstdint>
#include <string>

namespace nkigraph {

// One line saying how far a long job is: "377,600 of 755,200 instructions
// (50.0%), 188,800/s, 2 s left". The rate is `done / elapsed_seconds`; the
// time left assumes it holds, and is "?" until something is done.
std::string FormatProgress(int64_t done, int64_t total, double elapsed_seconds);

// A duration for people: "0 s", "42 s", "3 min 05 s", "2 h 07 min".
std::string FormatDuration(double seconds);

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_PROGRESS_TEXT_H_
