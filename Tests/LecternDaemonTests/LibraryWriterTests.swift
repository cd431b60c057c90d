import Foundation
import LecternLibrary
import Testing
import TestSupport
import Threads
@testable import LecternDaemon

/// The name the OS knows the calling thread by, as gdb and top show it.
private func threadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .newlines)
}

@Suite struct LibraryWriterTests {
    @Test func writesRunOnTheWriterThreadNotThePool() async throws {
        let directory = try TemporaryDirectory(prefix: "lectern-writer")
        let library = try Library(path: directory.path + "/library.sqlite")
        let writer = LibraryWriter(library: library, executor: ThreadExecutor(name: "lectern-test-db"))

        let (shelf, thread) = try await writer.write { library in
            (try library.createShelf(named: "Fiction", in: nil), threadName())
        }
        #expect(thread == "lectern-test-db")
        #expect(threadName() != "lectern-test-db")
        #expect(try library.shelves(in: nil).map(\.id) == [shelf.id])

        // A failed write's error reaches the caller.
        await #expect(throws: LibraryError.self) { try await writer.write { try $0.renameShelf(shelf.id! + 1, to: "Nope") } }
    }
}
