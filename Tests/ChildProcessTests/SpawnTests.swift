import ChildProcess
import Foundation
import Testing
import TestSupport

@Suite struct SpawnTests {
    /// A program whose file another process still holds open for writing ("Text file busy": a process another thread
    /// forked before its exec, holding the descriptor the file was written through) starts once that process lets go,
    /// instead of failing. Here the holder is a `sleep` that inherited the descriptor and keeps it for 0.1 s.
    @Test func aProgramBusyForAMomentStartsOnceItIsFree() throws {
        let folder = try TemporaryDirectory(prefix: "lectern-spawn")
        defer { folder.remove() }
        let script = folder.path + "/prog"
        let fd = open(script, O_WRONLY | O_CREAT | O_EXCL, 0o755)  // not close-on-exec: the holder inherits it
        try #require(fd >= 0)
        let text = Array("#!/bin/sh\nexit 7\n".utf8)
        #expect(write(fd, text, text.count) == text.count)
        guard case .success(let holder) = spawnChild("sleep", arguments: ["0.1"], descriptors: []) else {
            Issue.record("sleep did not start")
            return
        }
        close(fd)
        let started = spawnChild(script, arguments: [], descriptors: [])
        guard case .success(let child) = started else {
            Issue.record("the busy program did not start: \(started)")
            return
        }
        var status: Int32 = 0
        #expect(waitpid(child, &status, 0) == child)
        #expect(describeExit(status) == "exit status 7")
        waitpid(holder, &status, 0)
    }

    @Test func aMissingProgramSaysSo() {
        let started = spawnChild("/nonexistent/lectern-program", arguments: [], descriptors: [])
        guard case .failure(let error) = started else {
            Issue.record("a missing program started")
            return
        }
        #expect(error.description == "/nonexistent/lectern-program: No such file or directory")
    }
}
