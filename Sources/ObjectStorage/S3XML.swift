import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML document as S3 sends them (the error document, listings, multipart results): elements
/// with text or child elements, no attributes needed. Sans-I/O: bytes in, a tree out, with the
/// size and shape bounded before anything is kept.
struct S3XMLElement: Sendable, Equatable {
    var name: String
    var text: String
    var children: [S3XMLElement]

    /// The first child called `name`.
    func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    /// Every child called `name`, in order.
    func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child called `name`.
    func text(_ name: String) -> String? { child(name)?.text }
}

enum S3XML {
    struct Limits: Sendable {
        /// Documents larger than this are refused unparsed (a listing page of 1000 keys of
        /// 1 KiB each is about 1.3 MiB).
        var maximumBytes = 4 << 20
        /// A listing page is 1000 entries of a few elements each.
        var maximumElements = 20_000
        /// S3's documents are three or four levels deep.
        var maximumDepth = 8
    }

    enum ParseError: Error, Equatable, CustomStringConvertible {
        case tooLarge(Int)
        case tooManyElements
        case tooDeep
        case malformed(String)

        var description: String {
            switch self {
            case .tooLarge(let bytes): "an XML document of \(bytes) bytes is over the limit"
            case .tooManyElements: "an XML document with more elements than the limit"
            case .tooDeep: "an XML document nested deeper than the limit"
            case .malformed(let reason): "XML that does not parse: \(reason)"
            }
        }
    }

    /// Parses `bytes` into the root element.
    static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits()) throws(ParseError) -> S3XMLElement {
        guard bytes.count <= limits.maximumBytes else { throw .tooLarge(bytes.count) }
        let parser = XMLParser(data: Data(bytes))
        // No DTDs, no external entities: S3 sends none, and resolving them is how XML parsers
        // get turned against their host.
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        let builder = TreeBuilder(limits: limits)
        parser.delegate = builder
        let parsed = parser.parse()
        if let error = builder.error { throw error }
        guard parsed, let root = builder.root else {
            throw .malformed(parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element")
        }
        return root
    }

    /// `text` with the five XML special characters escaped, for request bodies.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }

    /// Builds the tree as XMLParser reports elements; stops the parse at the first limit.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        let limits: Limits
        var stack: [S3XMLElement] = []
        var root: S3XMLElement?
        var elements = 0
        var error: ParseError?

        init(limits: Limits) { self.limits = limits }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
                    attributes attributeDict: [String: String] = [:]) {
            elements += 1
            if elements > limits.maximumElements { fail(parser, .tooManyElements); return }
            if stack.count >= limits.maximumDepth { fail(parser, .tooDeep); return }
            stack.append(S3XMLElement(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard var element = stack.popLast() else { return }
            // Text between child elements is indentation; a leaf keeps its text exactly.
            if !element.children.isEmpty { element.text = "" }
            if stack.isEmpty { root = element } else { stack[stack.count - 1].children.append(element) }
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        private func fail(_ parser: XMLParser, _ error: ParseError) {
            if self.error == nil { self.error = error }
            parser.abortParsing()
        }
    }
}
