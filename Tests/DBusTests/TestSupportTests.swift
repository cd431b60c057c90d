import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

@Suite struct TestSupportTests {
    // The blocking overloads under test run off the cooperative pool (`offThePool`): other suites need its threads.
    @Test func spawningShExit3Returns3() async throws {
        let p = try Subprocess("sh", ["-c", "exit 3"])
        #expect(try await offThePool { p.waitForExit(timeout: .seconds(10)) } == 3)
        #expect(p.termination == .exited(3))

        let r = try await offThePool { try Subprocess.run("sh", ["-c", "echo out; echo err >&2; exit 3"], timeout: .seconds(10)) }
        #expect(r.status == 3)
        #expect(r.stdout == "out\n")
        #expect(r.stderr == "err\n")
    }

    @Test func asyncOverloadsDoNotBlock() async throws {
        let r = try await Subprocess.run("sh", ["-c", "printf 'a\\nb\\n'; exit 4"], timeout: .seconds(10))
        #expect(r.status == 4)
        #expect(r.stdout == "a\nb\n")

        let p = try Subprocess("sh", ["-c", "echo one; echo two; echo three"])
        #expect(await p.readLine(timeout: .seconds(5)) == "one")
        #expect(await p.waitForExit(timeout: .seconds(5)) == 0)
        #expect(await p.readAll() == "two\nthree\n")
    }

    @Test func readLineTimesOutAndEnvironmentIsReplaced() async throws {
        let p = try Subprocess(
            "/bin/sh", ["-c", "echo \"$LECTERN_X\"; sleep 1; echo late; pwd"],
            environment: Subprocess.environment(adding: ["LECTERN_X": "hello world"]),
            workingDirectory: URL(fileURLWithPath: "/usr"))
        // One call after the other on one thread: the 100 ms timeout falls within the child's 1 s sleep.
        let (first, none, late, status, rest, afterEnd) = try await offThePool {
            (p.readLine(timeout: .seconds(5)), p.readLine(timeout: .milliseconds(100)), p.readLine(timeout: .seconds(5)),
             p.waitForExit(timeout: .seconds(5)), p.readAll(), p.readLine(timeout: .milliseconds(10)))
        }
        #expect(first == "hello world")
        #expect(none == nil)
        #expect(late == "late")
        #expect(status == 0)
        #expect(rest == "/usr\n")
        #expect(afterEnd == nil)

        let q = try Subprocess("sh", ["-c", "echo ${HOME:-unset}"], environment: ["PATH": "/usr/bin:/bin"])
        let (qStatus, qOutput) = try await offThePool { (q.waitForExit(timeout: .seconds(5)), q.readAll()) }
        #expect(qStatus == 0)
        #expect(qOutput == "unset\n")

        #expect(throws: SubprocessError.self) { try Subprocess("no-such-program-lectern") }
    }

    @Test func runKillsOnTimeout() async throws {
        // Timed on the thread that runs it: a busy pool's delay in resuming this test is not the tool's.
        let (result, took) = try await offThePool {
            let start = ContinuousClock.now
            let result = Result { try Subprocess.run("sleep", ["30"], timeout: .milliseconds(300)) }
            return (result, ContinuousClock.now - start)
        }
        #expect(throws: SubprocessError.self) { try result.get() }
        #expect(took < .seconds(5))
    }

    @Test func childIgnoresNothingShSleepStopsOnTerminate() async throws {
        // Block SIGTERM on this thread while spawning, as Foundation.Process leaves it for its children:
        // the child must still start with an empty mask.
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        var old = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &old)
        // A process group of its own, so terminate() reaches the `sleep` that `sh` (dash) starts too.
        let p = try Subprocess("sh", ["-c", "sleep 30"], stdout: .null, stderr: .null, newProcessGroup: true)
        pthread_sigmask(SIG_SETMASK, &old, nil)

        // From here to its end on one thread that does not wait for the pool: the test, resumed late by a busy pool,
        // could find `sleep 30` over.
        let (running, status, ended, took) = try await offThePool {
            usleep(100_000)
            let running = p.isRunning
            let status = Result { try String(contentsOfFile: "/proc/\(p.pid)/status", encoding: .utf8) }
            let start = ContinuousClock.now
            p.terminate()
            return (running, status, p.waitForExit(timeout: .seconds(5)), ContinuousClock.now - start)
        }
        #expect(running)
        let procStatus = try status.get()
        func mask(_ name: String) -> UInt64? {
            procStatus.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { UInt64($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) }
        }
        #expect(mask("SigBlk") == 0)
        // Signals 1...31 at their defaults. (glibc's posix_spawn leaves its two internal signals, 32 and 33,
        // ignored in the child; nothing uses them.)
        #expect(mask("SigIgn").map { $0 & 0x7fff_ffff } == 0)

        #expect(ended == 128 + SIGTERM)
        #expect(p.termination == .signaled(SIGTERM))
        #expect(took < .seconds(2))
        var survivors = livingMembers(ofProcessGroup: p.pid)
        for _ in 0..<100 where !survivors.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
            survivors = livingMembers(ofProcessGroup: p.pid)
        }
        #expect(survivors.isEmpty, "still running in the group: \(survivors)")
    }

    @Test func privateBusAnswersGetId() async throws {
        let start = ContinuousClock.now
        let bus = try PrivateBus()
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(bus.address.hasPrefix("unix:"))
        #expect(bus.environment["DBUS_SESSION_BUS_ADDRESS"] == bus.address)

        let r = try await Subprocess.run(
            "dbus-send",
            ["--bus=\(bus.address)", "--dest=org.freedesktop.DBus", "--print-reply", "/",
             "org.freedesktop.DBus.GetId"],
            timeout: .seconds(10))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("string \""))

        // Clients that read the environment find it too.
        let s = try await Subprocess.run(
            "dbus-send", ["--session", "--dest=org.freedesktop.DBus", "--print-reply", "/",
                          "org.freedesktop.DBus.GetId"],
            env: bus.environment, timeout: .seconds(10))
        #expect(s.status == 0, "\(s.stderr)")
        #expect(s.stdout.split(separator: "\n").last == r.stdout.split(separator: "\n").last)
    }

    @Test func killingTheBusLeavesNoDaemonBehind() throws {
        let bus = try PrivateBus()
        let pid = bus.pid
        #expect(kill(pid, 0) == 0)
        let socketPath = bus.address.split(separator: ",").first.map { String($0.dropFirst("unix:path=".count)) }
        bus.stop()
        #expect(!bus.isRunning)
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
        #expect(!FileManager.default.fileExists(atPath: socketPath ?? "/"))
        // No dbus-daemon (zombie or not) with this pid, and none still using its directory.
        let dir = socketPath.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path } ?? "?"
        let procs = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in procs where Int32(entry) != nil {
            guard let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/cmdline")) else { continue }
            let text = String(decoding: cmdline, as: UTF8.self)
            #expect(!(text.contains("dbus-daemon") && text.contains(dir)), "left behind: \(entry) \(text)")
        }
    }

    @Test func temporaryDirectoryIsRemoved() throws {
        var path = ""
        do {
            let dir = try TemporaryDirectory()
            path = dir.path
            try FileManager.default.createDirectory(at: dir.appending("a"), withIntermediateDirectories: true)
            try "x".write(to: dir.appending("a/b.txt"), atomically: false, encoding: .utf8)
            #expect(FileManager.default.fileExists(atPath: path + "/a/b.txt"))
        }
        #expect(!path.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func productsDirectoryHoldsTheBuiltExecutables() {
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: productsDirectory.path, isDirectory: &isDir) && isDir.boolValue)
        // IntegrationTests depends on lecternd and lectern, so `swift test` builds them.
        #expect(FileManager.default.isExecutableFile(atPath: builtExecutable("lecternd").path),
                "\(productsDirectory.path)")
        #expect(FileManager.default.isExecutableFile(atPath: builtExecutable("lectern").path))
    }
}

/// Pids of processes (not zombies) in process group `pgid`, from /proc/<pid>/stat.
private func livingMembers(ofProcessGroup pgid: pid_t) -> [Int32] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { entry -> Int32? in
        guard let pid = Int32(entry),
              let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After "pid (comm) ": state ppid pgrp ...
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 2, fields[0] != "Z", Int32(fields[2]) == pgid else { return nil }
        return pid
    }
}
