-- pandoc Lua filter for "make docs": plain text in the manner of the
-- kernel's old Documentation/trace/*.txt files. Section titles are
-- underlined ("=" for a chapter's sections, "-" below them), and the
-- typographic characters asciidoctor substitutes go back to ASCII.

local ascii = {
  ["\u{2019}"] = "'", ["\u{2018}"] = "'", ["\u{201C}"] = '"', ["\u{201D}"] = '"',
  ["\u{2026}"] = "...", ["\u{200B}"] = "", ["\u{2013}"] = "-", ["\u{2014}"] = "--",
  ["\u{2192}"] = "->", ["\u{21D0}"] = "<=", ["\u{2190}"] = "<-", ["\u{21D2}"] = "=>", ["\u{00A0}"] = " ",
}

local function plain(s)
  for k, v in pairs(ascii) do
    s = s:gsub(k, v)
  end
  return s
end

function Str(el)
  return pandoc.Str(plain(el.text))
end

function Code(el)
  el.text = plain(el.text)
  return el
end

function CodeBlock(el)
  el.text = plain(el.text)
  return el
end

local function underlined(title, rule)
  title = plain(title)
  return pandoc.RawBlock("plain", title .. "\n" .. string.rep(rule, utf8.len(title) or #title))
end

function Header(el)
  return underlined(pandoc.utils.stringify(el.content), el.level <= 1 and "=" or "-")
end

-- The document's title (DocBook splits "a: b" into title and subtitle)
-- as the first lines, framed, without the date that DocBook carries.
function Pandoc(doc)
  local title = doc.meta.title and pandoc.utils.stringify(doc.meta.title) or ""
  if doc.meta.subtitle then
    title = title .. ": " .. pandoc.utils.stringify(doc.meta.subtitle)
  end
  if doc.meta.notitle then
    title = ""    -- the HTML route has the title as its first heading already
  end
  if title ~= "" then
    table.insert(doc.blocks, 1, underlined(title, "="))
    table.insert(doc.blocks, 1, pandoc.RawBlock("plain", string.rep("=", utf8.len(plain(title)) or #title)))
  end
  return doc
end

-- A table's columns keep AsciiDoc's relative widths (cols="3,1,5"), but
-- each is at least as wide as its longest word: else pandoc breaks a
-- short column's EINVAL into "E" and "INVAL". What is left of the line
-- goes to the columns in their proportions. A table whose words alone
-- do not fit takes the widths of its contents.
local COLUMNS = 78

local function longest_word(blocks)
  local longest = 0
  for word in pandoc.utils.stringify(blocks):gmatch("%S+") do
    longest = math.max(longest, utf8.len(word) or #word)
  end
  return longest
end

local function table_rows(el)
  local rows = {}
  for _, row in ipairs(el.head.rows) do table.insert(rows, row) end
  for _, body in ipairs(el.bodies) do
    for _, row in ipairs(body.body) do table.insert(rows, row) end
  end
  return rows
end

function Table(el)
  local n = #el.colspecs
  local least, share, total = {}, {}, 0
  for i = 1, n do least[i] = 0 end
  for _, row in ipairs(table_rows(el)) do
    for i, cell in ipairs(row.cells) do
      if i <= n then
        least[i] = math.max(least[i], (longest_word(cell.contents) + 3) / COLUMNS)
      end
    end
  end
  local left = 1
  for i = 1, n do
    left = left - least[i]
    share[i] = tonumber(el.colspecs[i][2]) or 0
    total = total + share[i]
  end
  for i = 1, n do
    local width = pandoc.ColWidthDefault
    if left >= 0 and total > 0 then
      width = least[i] + left * share[i] / total
    end
    el.colspecs[i] = {el.colspecs[i][1], width}
  end
  return el
end
