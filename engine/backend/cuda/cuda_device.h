// CUDA device discovery, device memory, copies and streams, with every CUDA error turned into a
// hearth::Status that names the failing call. No CUDA header is needed to include this file.
#pragma once

#include "hearth/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CUstream_st;    // the CUDA runtime's stream type (cudaStream_t is CUstream_st*)
struct CUgraphExec_st; // an instantiated graph (cudaGraphExec_t)

namespace hearth::cuda {

using StreamHandle = CUstream_st*; // nullptr is the legacy default stream

// Turns a cudaError_t (passed as int) into a Status: "<call>: <cudaGetErrorString> (<name>)".
// cudaSuccess gives ok. Missing driver / device maps to Unsupported, out of memory to OutOfMemory.
Status cudaStatus(int error, const char* call);

struct DeviceInfo {
    int index = 0;
    std::string name;
    int ccMajor = 0, ccMinor = 0; // compute capability
    uint64_t totalBytes = 0, freeBytes = 0;
    int smCount = 0;
    bool integrated = false; // shares system memory (e.g. Jetson)
};

// Number of CUDA devices; an error (not zero) when the driver or a device is missing, so callers
// can tell the user why.
Result<int> deviceCount();
Result<std::vector<DeviceInfo>> listDevices();
Status setDevice(int index);
// Free and total bytes of the current device's memory (cudaMemGetInfo).
Status memoryInfo(uint64_t& freeBytes, uint64_t& totalBytes);
Status synchronizeDevice();

// A block of device memory, freed on destruction. Move-only.
class DeviceBuffer {
public:
    static Result<DeviceBuffer> allocate(size_t bytes);
    DeviceBuffer() = default;
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer();

    void* data() const { return m_ptr; }
    template <typename T> T* as() const { return static_cast<T*>(m_ptr); }
    size_t bytes() const { return m_bytes; }

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

// A non-blocking stream, destroyed on destruction. Move-only.
class Stream {
public:
    static Result<Stream> create();
    Stream() = default;
    Stream(Stream&& o) noexcept;
    Stream& operator=(Stream&& o) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();

    StreamHandle handle() const { return m_stream; }
    Status synchronize() const;

private:
    StreamHandle m_stream = nullptr;
};

// A captured sequence of kernel launches, replayed with one call (CUDA graphs). The launches'
// arguments are frozen at capture: replays see new contents of the same buffers, so a caller
// recaptures whenever a shape or a buffer address changes. Move-only.
class Graph {
public:
    // Starts recording what this thread enqueues on `stream` (which must not be the legacy default
    // stream); nothing runs until the graph is launched. Only kernel launches and async copies
    // between device buffers may be enqueued until endCapture or abortCapture.
    static Status beginCapture(StreamHandle stream);
    // Stops recording and instantiates the graph.
    static Result<Graph> endCapture(StreamHandle stream);
    // Stops recording after a failed enqueue, dropping what was recorded.
    static void abortCapture(StreamHandle stream);

    Graph() = default;
    Graph(Graph&& o) noexcept;
    Graph& operator=(Graph&& o) noexcept;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph();

    bool valid() const { return m_exec != nullptr; }
    // Enqueues one replay on `stream`.
    Status launch(StreamHandle stream) const;

private:
    CUgraphExec_st* m_exec = nullptr;
};

// Asynchronous on `stream` (pageable host memory makes them synchronous in practice).
Status copyToDevice(void* dst, const void* src, size_t bytes, StreamHandle stream = nullptr);
Status copyToHost(void* dst, const void* src, size_t bytes, StreamHandle stream = nullptr);
Status copyDeviceToDevice(void* dst, const void* src, size_t bytes, StreamHandle stream = nullptr);
Status fillZero(void* dst, size_t bytes, StreamHandle stream = nullptr);

} // namespace hearth::cuda
