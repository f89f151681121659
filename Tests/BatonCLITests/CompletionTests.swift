@testable import baton
import Foundation
import Testing

@Suite("Shell completion", .offPool)
struct CompletionTests {
    func shell(_ path: String, _ script: String) throws -> (code: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-c", script]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func write(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "baton-completion-\(UUID().uuidString)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("the bash script parses and completes commands, then each command's options")
    func bash() throws {
        let path = try write(CompletionCommand.bash(CommandList.all))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try shell("/bin/bash", "bash -n \(path)").code == 0)
        func complete(_ words: String) throws -> String {
            try shell("/bin/bash", "source \(path); COMP_WORDS=(\(words)); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _baton; echo \"${COMPREPLY[*]}\"")
                .output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try complete("baton hist") == "history")
        #expect(try complete("baton st") == "status stats")
        #expect(try complete("baton --socket /tmp/s wa") == "watch wait")
        #expect(try complete("baton history --ph") == "--phase")
        #expect(try complete("baton prune --") == "--dry-run --json --socket --database --help")
        #expect(try complete("baton history --database /tm").contains("/tmp"))
    }

    @Test("the zsh script parses and names every command")
    func zsh() throws {
        let text = CompletionCommand.zsh(CommandList.all)
        let path = try write(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try shell("/usr/bin/zsh", "zsh -n \(path)")
        #expect(result.code == 0, "\(result.output)")
        #expect(text.hasPrefix("#compdef baton"))
        for command in CommandList.all { #expect(text.contains("'\(command.name):"), "\(command.name)") }
    }

    @Test("the fish script completes commands, each command's options, and files after --socket", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/fish")))
    func fish() throws {
        let path = try write(CompletionCommand.fish(CommandList.all))
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Each line of `complete -C` is a candidate, a tab, and its description: the candidates, sorted.
        func complete(_ line: String) throws -> String {
            let result = try shell("/usr/bin/fish", "source \(path); and complete -C '\(line)'")
            return result.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }.sorted().joined(separator: " ")
        }
        #expect(try complete("baton ru") == "run")
        #expect(try complete("baton st") == "stats status")
        #expect(try complete("baton --socket /tmp/s wa") == "wait watch")
        #expect(try complete("baton history --ph") == "--phase")
        #expect(try complete("baton prune --") == "--database --dry-run --help --json --socket")
        #expect(try complete("baton history --database /tm").contains("/tmp/"))
        let described = try shell("/usr/bin/fish", "source \(path); and complete -C 'baton hist'").output
        #expect(described == "history\t\(CommandList.all.first { $0.name == "history" }!.summary)\n", "\(described)")
    }
}
