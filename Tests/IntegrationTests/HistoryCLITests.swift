import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// `lectern undo`, `lectern history` and `lectern stats`.
    @Suite struct HistoryCLI {
        @Test func theCLIUndoesAndExportsTheHistory() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                #expect(try await d.lectern("undo").status == 1, "nothing current")
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                try await d.waitForPosition(atLeast: 1_000_000)
                try await d.listen("JumpToFile", [.int32(2), .int64(3_000_000)])
                try await d.waitForUndoStack(book, count: 1)
                try await d.waitForPosition(atLeast: 3_600_000)
                let list = try await d.lectern("undo", "--list")
                #expect(list.status == 0 && list.stdout.contains("in file 1 (before a jump)"), "\(list)")
                let undo = try await d.lectern("undo")
                #expect(undo.status == 0 && undo.stdout.hasPrefix("back to 0:0") && undo.stdout.contains("file 1"), "\(undo)")
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                let again = try await d.lectern("undo")
                #expect(again.status == 1 && again.stderr.contains("nothing to undo"), "\(again)")
                try await d.call("Pause")
                try await d.waitForStatus("Paused")

                let csv = try await d.lectern("history", "--csv")
                let lines = csv.stdout.components(separatedBy: "\n")
                #expect(csv.status == 0 && lines.first == "book,title,started,ended,from,to,listened,content,speed,silence", "\(csv)")
                #expect(lines.count >= 2 && lines.dropFirst().allSatisfy { $0.hasPrefix("\(book),longbook,") }, "\(csv)")
                let json = try await d.lectern("history", "--json", "--days", "1")
                let sessions = (try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) as? [[String: Any]]
                #expect(sessions?.count == lines.count - 1, "\(json)")
                #expect(sessions?.first?["book"] as? Int64 == book || sessions?.first?["book"] as? Int == Int(book), "\(json)")
                #expect((sessions?.first?["listened"] as? Double ?? 0) > 0, "\(json)")
                let text = try await d.lectern("history")
                #expect(text.status == 0 && text.stdout.contains("longbook"), "\(text)")
                let stats = try await d.lectern("stats")
                #expect(stats.status == 0 && stats.stdout.hasPrefix("listened ") && stats.stdout.contains("per book:\n"), "\(stats)")
                let statsJSON = try await d.lectern("stats", "--json", "--days", "7")
                #expect((try? JSONSerialization.jsonObject(with: Data(statsJSON.stdout.utf8))) as? [String: Any] != nil, "\(statsJSON)")
                // Usage errors are the CLI's, before the daemon is asked.
                #expect(try await d.lectern("stats", "--days", "0").status == 64)
                #expect(try await d.lectern("history", "--csv", "--json").status == 64)
            }
        }
    }
}
