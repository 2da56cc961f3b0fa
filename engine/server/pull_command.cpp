// commandPuller: pulls a hub model by running a command (hearth-cli pull ... --json) in a child
// process and reading its progress, one JSON object per line; the server stays free of the hub
// and download code the command already has.
#include "hearth/server.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace hearth::server {

namespace {

// A child whose stdout is a pipe; killed and reaped on destruction if still running.
class Child {
public:
    Status start(const std::vector<std::string>& argv) {
        int fds[2];
        if (pipe(fds) != 0) return Status(ErrorCode::IoError, std::string("pipe: ") + std::strerror(errno));
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&actions, fds[0]);
        posix_spawn_file_actions_addclose(&actions, fds[1]);
        std::vector<char*> args;
        for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        const int rc = posix_spawn(&m_pid, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        close(fds[1]);
        if (rc != 0) {
            close(fds[0]);
            m_pid = -1;
            return Status(ErrorCode::IoError, "cannot run " + argv[0] + ": " + std::strerror(rc));
        }
        m_out = fds[0];
        return Status::ok();
    }
    // The next line of its output without the newline; false at its end.
    bool readLine(std::string& line) {
        for (;;) {
            if (const size_t nl = m_buffer.find('\n'); nl != std::string::npos) {
                line = m_buffer.substr(0, nl);
                m_buffer.erase(0, nl + 1);
                return true;
            }
            char chunk[4096];
            const ssize_t n = read(m_out, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (m_buffer.empty()) return false;
                line.swap(m_buffer);
                m_buffer.clear();
                return true;
            }
            m_buffer.append(chunk, size_t(n));
            if (m_buffer.size() > (1u << 20)) return false; // no line is this long: not our command
        }
    }
    void stop() {
        if (m_pid > 0) kill(m_pid, SIGTERM);
    }
    // Waits for it to end: its exit code, or -1 when it did not exit normally.
    int wait() {
        if (m_out >= 0) close(m_out);
        m_out = -1;
        int status = 0;
        pid_t r;
        do r = waitpid(m_pid, &status, 0);
        while (r < 0 && errno == EINTR);
        m_pid = -1;
        return r > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ~Child() {
        if (m_pid > 0) {
            stop();
            wait();
        }
        if (m_out >= 0) close(m_out);
    }

private:
    pid_t m_pid = -1;
    int m_out = -1;
    std::string m_buffer;
};

Status pullError(int httpStatus, const std::string& message) {
    switch (httpStatus) {
    case 400: return invalidArgument(message);
    case 404: return notFound(message);
    default: return Status(ErrorCode::IoError, message);
    }
}

} // namespace

ModelPuller commandPuller(std::vector<std::string> argv) {
    return [argv = std::move(argv)](const std::string& name,
                                    const std::function<bool(const PullProgress&)>& progress) -> Status {
        if (name.empty() || name.front() == '-') return invalidArgument("'" + name.substr(0, 200) + "' is not a model name");
        std::vector<std::string> command = argv;
        command.push_back(name);
        command.push_back("--json");
        Child child;
        if (Status s = child.start(command); !s.isOk()) return s;
        bool succeeded = false;
        std::string error;
        int errorStatus = 500;
        std::string line;
        while (child.readLine(line)) {
            const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
            if (!j.is_object()) continue; // not a progress line
            if (j.contains("error") && j["error"].is_string()) {
                error = j["error"].get<std::string>();
                if (j.contains("status") && j["status"].is_number_integer()) errorStatus = j["status"].get<int>();
                continue;
            }
            PullProgress p;
            if (j.contains("status") && j["status"].is_string()) p.status = j["status"].get<std::string>();
            if (j.contains("digest") && j["digest"].is_string()) p.digest = j["digest"].get<std::string>();
            if (j.contains("total") && j["total"].is_number()) p.total = j["total"].get<uint64_t>();
            if (j.contains("completed") && j["completed"].is_number()) p.completed = j["completed"].get<uint64_t>();
            if (p.status == "success") {
                succeeded = true;
                continue; // the caller reports success once the command has ended well
            }
            if (!progress(p)) {
                child.stop();
                child.wait();
                return Status(ErrorCode::Cancelled, "the pull was stopped");
            }
        }
        const int code = child.wait();
        if (code == 0 && succeeded) return Status::ok();
        if (!error.empty()) return pullError(errorStatus, error);
        return Status(ErrorCode::IoError, "the pull ended without success (exit code " + std::to_string(code) + ")");
    };
}

} // namespace hearth::server
