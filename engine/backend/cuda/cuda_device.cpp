// Device discovery, memory and streams over the CUDA runtime API (statically linked cudart).
#include "backend/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <utility>

namespace hearth::cuda {

Status cudaStatus(int error, const char* call) {
    const auto e = static_cast<cudaError_t>(error);
    if (e == cudaSuccess) return Status::ok();
    std::string message = std::string(call) + ": " + cudaGetErrorString(e) + " (" +
                          cudaGetErrorName(e) + ")";
    switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion: return unsupported(std::move(message));
    case cudaErrorMemoryAllocation: return outOfMemory(std::move(message));
    case cudaErrorInvalidValue: return invalidArgument(std::move(message));
    default: return internalError(std::move(message));
    }
}

Result<int> deviceCount() {
    int n = 0;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaGetDeviceCount(&n), "cudaGetDeviceCount"));
    if (n <= 0) return unsupported("cudaGetDeviceCount: no CUDA device");
    return n;
}

Result<std::vector<DeviceInfo>> listDevices() {
    HEARTH_ASSIGN_OR_RETURN(const int n, deviceCount());
    int current = 0;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaGetDevice(&current), "cudaGetDevice"));
    std::vector<DeviceInfo> out;
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop{};
        HEARTH_RETURN_IF_ERROR(cudaStatus(cudaGetDeviceProperties(&prop, i), "cudaGetDeviceProperties"));
        DeviceInfo info;
        info.index = i;
        info.name = prop.name;
        info.ccMajor = prop.major;
        info.ccMinor = prop.minor;
        info.smCount = prop.multiProcessorCount;
        info.integrated = prop.integrated != 0;
        info.totalBytes = prop.totalGlobalMem;
        HEARTH_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(i), "cudaSetDevice"));
        size_t freeB = 0, totalB = 0;
        HEARTH_RETURN_IF_ERROR(cudaStatus(cudaMemGetInfo(&freeB, &totalB), "cudaMemGetInfo"));
        info.freeBytes = freeB;
        info.totalBytes = totalB;
        out.push_back(std::move(info));
    }
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaSetDevice(current), "cudaSetDevice"));
    return out;
}

Status setDevice(int index) { return cudaStatus(cudaSetDevice(index), "cudaSetDevice"); }

Status memoryInfo(uint64_t& freeBytes, uint64_t& totalBytes) {
    size_t f = 0, t = 0;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaMemGetInfo(&f, &t), "cudaMemGetInfo"));
    freeBytes = f;
    totalBytes = t;
    return Status::ok();
}

Status synchronizeDevice() { return cudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
    DeviceBuffer b;
    if (bytes == 0) return b;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaMalloc(&b.m_ptr, bytes),
                                      ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str()));
    b.m_bytes = bytes;
    return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (m_ptr) cudaFree(m_ptr);
        m_ptr = std::exchange(o.m_ptr, nullptr);
        m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
}

DeviceBuffer::~DeviceBuffer() {
    if (m_ptr) cudaFree(m_ptr);
}

Result<Stream> Stream::create() {
    Stream s;
    cudaStream_t h = nullptr;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaStreamCreateWithFlags(&h, cudaStreamNonBlocking),
                                      "cudaStreamCreateWithFlags"));
    s.m_stream = h;
    return s;
}

Stream::Stream(Stream&& o) noexcept : m_stream(std::exchange(o.m_stream, nullptr)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
    if (this != &o) {
        if (m_stream) cudaStreamDestroy(m_stream);
        m_stream = std::exchange(o.m_stream, nullptr);
    }
    return *this;
}

Stream::~Stream() {
    if (m_stream) cudaStreamDestroy(m_stream);
}

Status Stream::synchronize() const {
    return cudaStatus(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize");
}

Status Graph::beginCapture(StreamHandle stream) {
    if (!stream) return invalidArgument("cuda graph: capture needs a created stream, not the default one");
    return cudaStatus(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

Result<Graph> Graph::endCapture(StreamHandle stream) {
    cudaGraph_t graph = nullptr;
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture"));
    if (!graph) return internalError("cudaStreamEndCapture: no graph was recorded");
    Graph g;
    cudaGraphExec_t exec = nullptr;
    const Status s = cudaStatus(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graph); // the executable graph keeps what it needs
    HEARTH_RETURN_IF_ERROR(s);
    g.m_exec = exec;
    return g;
}

void Graph::abortCapture(StreamHandle stream) {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    cudaGetLastError(); // a capture invalidated by a failed call leaves a (non-sticky) error; clear it
}

Graph::Graph(Graph&& o) noexcept : m_exec(std::exchange(o.m_exec, nullptr)) {}

Graph& Graph::operator=(Graph&& o) noexcept {
    if (this != &o) {
        if (m_exec) cudaGraphExecDestroy(m_exec);
        m_exec = std::exchange(o.m_exec, nullptr);
    }
    return *this;
}

Graph::~Graph() {
    if (m_exec) cudaGraphExecDestroy(m_exec);
}

Status Graph::launch(StreamHandle stream) const {
    if (!m_exec) return invalidArgument("cuda graph: launch of an empty graph");
    return cudaStatus(cudaGraphLaunch(m_exec, stream), "cudaGraphLaunch");
}

Status copyToDevice(void* dst, const void* src, size_t bytes, StreamHandle stream) {
    return cudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
                      "cudaMemcpyAsync(host to device)");
}

Status copyToHost(void* dst, const void* src, size_t bytes, StreamHandle stream) {
    HEARTH_RETURN_IF_ERROR(cudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
                                      "cudaMemcpyAsync(device to host)"));
    return cudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

Status copyDeviceToDevice(void* dst, const void* src, size_t bytes, StreamHandle stream) {
    return cudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream),
                      "cudaMemcpyAsync(device to device)");
}

Status fillZero(void* dst, size_t bytes, StreamHandle stream) {
    return cudaStatus(cudaMemsetAsync(dst, 0, bytes, stream), "cudaMemsetAsync");
}

} // namespace hearth::cuda
