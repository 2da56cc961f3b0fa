// The server's progress lines for long generations (see progress_log.h).
#include "server/progress_log.h"

#include <utility>

namespace hearth::server {

ProgressLog::ProgressLog(std::string label, Clock::time_point start)
    : m_label(std::move(label)), m_start(start), m_next(start + kFirstAfter) {}

std::string ProgressLog::due(const StreamProgress& progress, Clock::time_point now) {
    if (now < m_next) return {};
    m_next = now + kEvery;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - m_start).count();
    std::string line = (m_label.empty() ? std::string("a request") : m_label) + " · " + std::to_string(seconds) + " s · ";
    if (progress.tokens > 0)
        line += std::to_string(progress.tokens) + (progress.tokens == 1 ? " token written" : " tokens written");
    else if (progress.promptTotal > 0)
        line += "reading the prompt: " + std::to_string(progress.promptDone) + " of " +
                std::to_string(progress.promptTotal) + " tokens";
    else
        line += "waiting for the engine";
    return line;
}

} // namespace hearth::server
