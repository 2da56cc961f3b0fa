// Where a Vulkan device's time goes, for tuning (HEARTH_VK_PROFILE=1): a timestamp after every
// dispatch of a recorded command buffer, read back after each submit and summed per shader, and the
// time the driver took to compile each pipeline; the tables (calls, total, mean, share) go to
// stderr when the device closes. Off, it costs nothing.
#pragma once

#include "backend/vulkan/vk_context.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hearth::vk {

// The timestamps of one command buffer: names[i] is the dispatch that ended at query i + 1.
struct ProfileMarks {
    VkQueryPool pool = VK_NULL_HANDLE;
    std::vector<std::string> names;
};

class Profiler {
public:
    // A profiler when HEARTH_VK_PROFILE is set (not "0") and the queue has timestamps, else null.
    static std::unique_ptr<Profiler> fromEnv(Context& ctx);
    ~Profiler();

    // At the start of a command buffer: resets its queries and writes the first timestamp.
    void begin(VkCommandBuffer cmd, ProfileMarks& m);
    // After a dispatch: its end time.
    void mark(VkCommandBuffer cmd, ProfileMarks& m, const std::string& name);
    // After the command buffer ran: adds its dispatches' times; `keep` for a list submitted again.
    void collect(ProfileMarks& m, bool keep);
    void release(ProfileMarks& m);
    // A pipeline's creation (the driver compiling the shader), listed as "compile <name>".
    void addCompile(const std::string& name, std::chrono::steady_clock::duration d);

private:
    explicit Profiler(Context& ctx) : m_ctx(ctx) {}
    struct Stat {
        uint64_t calls = 0;
        double ns = 0;
    };
    Context& m_ctx;
    double m_periodNs = 1.0;
    uint64_t m_mask = ~0ull;
    std::map<std::string, Stat> m_stats, m_compiles;
};

} // namespace hearth::vk
