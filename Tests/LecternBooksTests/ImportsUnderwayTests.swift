import Foundation
import Synchronization
import Testing
@testable import LecternBooks

/// The imports an activation waits for: those of a folder holding one of its book's files, until they end, and never
/// longer than the bound.
@Suite struct ImportsUnderwayTests {
    @Test func anImportMayFindTheFilesInItsFolderOnly() {
        let underway = ImportsUnderway()
        underway.begin(["/books/Library/"])
        #expect(underway.mayFind(any: ["/books/Library/Saga/01.mp3"]))
        #expect(underway.mayFind(any: ["/elsewhere/1.mp3", "/books/Library/1.mp3"]))
        #expect(!underway.mayFind(any: ["/books/Library 2/Saga/01.mp3", "/books/1.mp3"]))
        #expect(!underway.mayFind(any: []))
        // Two imports of one folder: underway until both are done.
        underway.begin(["/books/Library"])
        underway.end(["/books/Library"])
        #expect(underway.mayFind(any: ["/books/Library/Saga/01.mp3"]))
        underway.end(["/books/Library/"])
        #expect(!underway.mayFind(any: ["/books/Library/Saga/01.mp3"]))
    }

    // Timed loosely: the suites run side by side, and a sleeping task may wake seconds late on a busy pool. A wait
    // that never ends fails by the time limit.

    @Test(.timeLimit(.minutes(1))) func noImportOfTheFilesNoWait() async {
        let underway = ImportsUnderway()
        underway.begin(["/books/Other"])
        let (done, waited) = await Self.waitForAFile(underway, atMost: .seconds(30))
        #expect(done && waited < .seconds(10), "\(waited)")
    }

    /// The wait ends after the import does, not at its bound. Compared with the moment the import ended, not with
    /// the 300 ms it sleeps first: that sleep starts on another thread, maybe before this test's clock starts.
    @Test(.timeLimit(.minutes(1))) func theWaitEndsWithTheImport() async {
        let underway = ImportsUnderway()
        underway.begin(["/books/Library"])
        let ended = Mutex<ContinuousClock.Instant?>(nil)
        Task {
            try? await Task.sleep(for: .milliseconds(300))
            ended.withLock { $0 = .now }
            underway.end(["/books/Library"])
        }
        let (done, waited) = await Self.waitForAFile(underway, atMost: .seconds(30))
        let returned = ContinuousClock.now
        let end = ended.withLock { $0 }
        #expect(done && end.map { returned >= $0 } == true, "waited \(waited), the import \(end.map { "ended \(returned - $0) before" } ?? "not ended")")
    }

    @Test(.timeLimit(.minutes(1))) func anImportThatNeverEndsIsWaitedForNoLongerThanTheBound() async {
        let underway = ImportsUnderway()
        underway.begin(["/books/Library"])
        let (done, waited) = await Self.waitForAFile(underway, atMost: .milliseconds(500))
        #expect(!done && waited >= .milliseconds(500), "\(waited)")
    }

    /// `underway`'s wait for a file of /books/Library: whether it ended with no import underway that may find the
    /// file (not at the bound), and how long it took.
    private static func waitForAFile(_ underway: ImportsUnderway, atMost limit: Duration) async -> (done: Bool, waited: Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        let done = await underway.wait(for: ["/books/Library/Saga/01.mp3"], atMost: limit)
        return (done, clock.now - start)
    }
}
