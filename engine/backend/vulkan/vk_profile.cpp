// The per-shader timing of vk_profile.h.
#include "backend/vulkan/vk_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hearth::vk {

namespace {

constexpr uint32_t kQueries = 8192; // timestamps per command buffer (later dispatches go untimed)

} // namespace

std::unique_ptr<Profiler> Profiler::fromEnv(Context& ctx) {
    const char* v = std::getenv("HEARTH_VK_PROFILE");
    if (!v || !*v || std::strcmp(v, "0") == 0) return nullptr;
    uint32_t families = 0;
    ctx.api.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    ctx.api.vkGetPhysicalDeviceQueueFamilyProperties(ctx.physical, &families, props.data());
    const uint32_t bits = ctx.queueFamily < families ? props[ctx.queueFamily].timestampValidBits : 0;
    if (bits == 0 || ctx.limits.timestampPeriod <= 0.0f) {
        std::fprintf(stderr, "HEARTH_VK_PROFILE: the device's queue has no timestamps\n");
        return nullptr;
    }
    auto p = std::unique_ptr<Profiler>(new Profiler(ctx));
    p->m_periodNs = double(ctx.limits.timestampPeriod);
    p->m_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    return p;
}

Profiler::~Profiler() {
    if (!m_compiles.empty()) {
        std::vector<std::pair<std::string, Stat>> rows(m_compiles.begin(), m_compiles.end());
        std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
        double all = 0;
        for (const auto& [name, s] : rows) all += s.ns;
        std::fprintf(stderr, "vulkan pipelines compiled: %zu in %.1f ms\n", rows.size(), all / 1e6);
        for (const auto& [name, s] : rows) std::fprintf(stderr, "  compile %-28s %11.1f ms\n", name.c_str(), s.ns / 1e6);
    }
    double total = 0;
    for (const auto& [name, s] : m_stats) total += s.ns;
    std::vector<std::pair<std::string, Stat>> rows(m_stats.begin(), m_stats.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    std::fprintf(stderr, "vulkan profile (%s): %.1f ms in dispatches\n", m_ctx.info.name.c_str(), total / 1e6);
    std::fprintf(stderr, "  %-28s %8s %11s %11s %6s\n", "shader", "calls", "total ms", "mean us", "share");
    for (const auto& [name, s] : rows)
        std::fprintf(stderr, "  %-28s %8llu %11.2f %11.1f %5.1f%%\n", name.c_str(), (unsigned long long)s.calls, s.ns / 1e6,
                     s.ns / 1e3 / double(std::max<uint64_t>(s.calls, 1)), total > 0 ? 100.0 * s.ns / total : 0.0);
}

void Profiler::addCompile(const std::string& name, std::chrono::steady_clock::duration d) {
    Stat& s = m_compiles[name];
    s.calls += 1;
    s.ns += double(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

void Profiler::begin(VkCommandBuffer cmd, ProfileMarks& m) {
    if (!m.pool) {
        VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        ci.queryCount = kQueries;
        if (m_ctx.api.vkCreateQueryPool(m_ctx.device, &ci, nullptr, &m.pool) != VK_SUCCESS) m.pool = VK_NULL_HANDLE;
    }
    m.names.clear();
    if (!m.pool) return;
    m_ctx.api.vkCmdResetQueryPool(cmd, m.pool, 0, kQueries);
    m_ctx.api.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.pool, 0);
}

void Profiler::mark(VkCommandBuffer cmd, ProfileMarks& m, const std::string& name) {
    if (!m.pool || m.names.size() + 1 >= kQueries) return;
    m.names.push_back(name);
    m_ctx.api.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m.pool, uint32_t(m.names.size()));
}

void Profiler::collect(ProfileMarks& m, bool keep) {
    const size_t n = m.names.size();
    if (m.pool && n > 0) {
        std::vector<uint64_t> t(n + 1);
        const VkResult r = m_ctx.api.vkGetQueryPoolResults(m_ctx.device, m.pool, 0, uint32_t(n + 1), t.size() * 8, t.data(),
                                                           8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
        if (r == VK_SUCCESS)
            for (size_t i = 0; i < n; ++i) {
                Stat& s = m_stats[m.names[i]];
                s.calls += 1;
                s.ns += double((t[i + 1] - t[i]) & m_mask) * m_periodNs;
            }
    }
    if (!keep) m.names.clear();
}

void Profiler::release(ProfileMarks& m) {
    if (m.pool) m_ctx.api.vkDestroyQueryPool(m_ctx.device, m.pool, nullptr);
    m.pool = VK_NULL_HANDLE;
    m.names.clear();
}

} // namespace hearth::vk
