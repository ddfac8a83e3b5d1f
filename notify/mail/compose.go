package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	htmltemplate "html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"text/template"
	"time"
)

// view is what the templates of a digest see.
type view struct {
	Name        string
	Count       int
	Items       []viewItem
	More        int
	Unsubscribe string
}

// viewItem is one item, cut and checked, as the templates see it.
type viewItem struct {
	Label, Conversation, From, Excerpt, Link, At string
}

// newView prepares the templates' data for d.
func newView(d Digest, unsubscribe string) view {
	v := view{Name: d.To.Name, Count: len(d.Items), Unsubscribe: unsubscribe}
	if v.Name == "" {
		v.Name = "there"
	}
	items := d.Items
	if len(items) > maxDigestItems {
		v.More, items = len(items)-maxDigestItems, items[:maxDigestItems]
	}
	for _, it := range items {
		v.Items = append(v.Items, newViewItem(it))
	}
	return v
}

// newViewItem cuts and checks the fields of one item.
func newViewItem(it Item) viewItem {
	vi := viewItem{
		Label:        it.Kind.label(),
		Conversation: oneLine(it.Conversation),
		From:         oneLine(it.From),
		Excerpt:      excerpt(it.Excerpt),
		Link:         safeLink(it.Link),
	}
	if !it.At.IsZero() {
		vi.At = it.At.UTC().Format("2006-01-02 15:04 UTC")
	}
	return vi
}

// oneLine folds the line breaks of a name into spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
}

var textTemplate = template.Must(template.New("text").Parse(`Hello {{.Name}},

You have {{.Count}} unread {{if eq .Count 1}}message{{else}}messages{{end}} on chatql.
{{range .Items}}
{{.Label}} in {{.Conversation}} from {{.From}}{{if .At}} ({{.At}}){{end}}:
  {{.Excerpt}}
{{- if .Link}}
  {{.Link}}{{end}}
{{end}}{{if .More}}
…and {{.More}} more.
{{end}}
--
You get this email because you have unread messages on chatql.
Unsubscribe: {{.Unsubscribe}}
`))

var htmlTemplate = htmltemplate.Must(htmltemplate.New("html").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Unread messages on chatql</title></head>
<body>
<p>Hello {{.Name}},</p>
<p>You have {{.Count}} unread {{if eq .Count 1}}message{{else}}messages{{end}} on chatql.</p>
<ul>
{{range .Items}}<li><p><strong>{{.Label}}</strong> in <strong>{{.Conversation}}</strong> from <strong>{{.From}}</strong>{{if .At}} ({{.At}}){{end}}</p>
<blockquote>{{.Excerpt}}</blockquote>
{{if .Link}}<p><a href="{{.Link}}">Open in chatql</a></p>{{end}}</li>
{{end}}</ul>
{{if .More}}<p>…and {{.More}} more.</p>{{end}}
<hr>
<p>You get this email because you have unread messages on chatql. <a href="{{.Unsubscribe}}">Unsubscribe</a></p>
</body></html>
`))

// Compose returns the RFC 5322 message of a digest from the given sender:
// multipart/alternative with text/plain and text/html parts, both UTF-8 in
// quoted-printable, and the one-click unsubscribe headers of RFC 8058.
func Compose(from mail.Address, d Digest) ([]byte, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	unsubscribe, err := d.unsubscribeLink()
	if err != nil {
		return nil, err
	}
	v := newView(d, unsubscribe)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	writeHeaders(&buf, from, d, unsubscribe, mw.Boundary())
	if err := writeParts(mw, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeHeaders writes the message's header section.
func writeHeaders(buf *bytes.Buffer, from mail.Address, d Digest, unsubscribe, boundary string) {
	date := d.Date
	if date.IsZero() {
		date = time.Now()
	}
	h := []string{
		"From: " + from.String(),
		"To: " + d.To.String(),
		"Subject: " + mime.QEncoding.Encode("utf-8", subject(len(d.Items))),
		"Date: " + date.Format(time.RFC1123Z),
		"Message-ID: " + messageID(from.Address),
		"MIME-Version: 1.0",
		"Auto-Submitted: auto-generated",
		"List-Unsubscribe: <" + unsubscribe + ">",
		"List-Unsubscribe-Post: List-Unsubscribe=One-Click",
		`Content-Type: multipart/alternative; boundary="` + boundary + `"`,
	}
	for _, line := range h {
		buf.WriteString(line + "\r\n")
	}
	buf.WriteString("\r\n")
}

// subject returns the subject of a digest of n items.
func subject(n int) string {
	if n == 1 {
		return "1 unread message on chatql"
	}
	return fmt.Sprintf("%d unread messages on chatql", n)
}

// messageID returns a new unique Message-ID in the sender's domain.
func messageID(fromAddress string) string {
	domain := "chatql.invalid"
	if _, d, ok := strings.Cut(fromAddress, "@"); ok && d != "" {
		domain = d
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "<" + hex.EncodeToString(b[:]) + "@" + domain + ">"
}

// writeParts writes the text and the HTML part, then closes mw.
func writeParts(mw *multipart.Writer, v view) error {
	var text, html bytes.Buffer
	if err := textTemplate.Execute(&text, v); err != nil {
		return fmt.Errorf("mail: text part: %w", err)
	}
	if err := htmlTemplate.Execute(&html, v); err != nil {
		return fmt.Errorf("mail: HTML part: %w", err)
	}
	if err := writePart(mw, "text/plain; charset=utf-8", crlf(text.Bytes())); err != nil {
		return err
	}
	if err := writePart(mw, "text/html; charset=utf-8", crlf(html.Bytes())); err != nil {
		return err
	}
	return mw.Close()
}

// writePart writes one quoted-printable part.
func writePart(mw *multipart.Writer, contentType string, body []byte) error {
	h := textproto.MIMEHeader{}
	h.Set("Content-Type", contentType)
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	w, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write(body); err != nil {
		return err
	}
	return qp.Close()
}

// crlf turns the bare line feeds of a template's output into CRLF, the
// line ending of mail.
func crlf(b []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

// TextBody returns the text/plain part of a digest, as LogMailer logs it.
func TextBody(d Digest) (string, error) {
	if err := d.check(); err != nil {
		return "", err
	}
	unsubscribe, err := d.unsubscribeLink()
	if err != nil {
		return "", err
	}
	var text bytes.Buffer
	if err := textTemplate.Execute(&text, newView(d, unsubscribe)); err != nil {
		return "", err
	}
	return text.String(), nil
}
