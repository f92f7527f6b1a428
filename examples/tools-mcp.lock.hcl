# This file is maintained by "symbi lock": it pins what the MCP servers and
# command tools of this configuration are. Commit it, and review a change to it
# like a change to the code: every run checks its servers and tools against it
# and, by default, refuses one that differs (on_drift). Update it with
# "symbi lock -update", which shows what changed first.

mcp_server "fs" {
  command          = ["node", "../testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "."]
  executable       = "/usr/bin/node"
  sha256           = "sha256:6295488653f0d93b0a157841746fef7e72cc4328cfb60c4bbe0ca2668a836ffd"
  protocol_version = "2025-11-25"
  server_name      = "secure-filesystem-server"
  server_version   = "0.2.0"

  tool "create_directory" {
    digest     = "sha256:e322518fb5d8a5bbb636ed2fd953b924b39054c43408fe560509a1f0d2ebce4b"
    definition = <<-EOT
      {
        "annotations": {
          "destructiveHint": false,
          "idempotentHint": true,
          "openWorldHint": false
        },
        "description": "Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation. If the directory already exists, this operation will succeed silently. Perfect for setting up directory structures for projects or ensuring required paths exist. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "create_directory",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Create Directory"
      }
    EOT
  }

  tool "directory_tree" {
    digest     = "sha256:155003180aba215ba0a45494e02e06ddd2fe55793314fc56cf8356f0bd5716ea"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array (which may be empty). The output is formatted with 2-space indentation for readability. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "excludePatterns": {
              "default": [],
              "items": {
                "type": "string"
              },
              "type": "array"
            },
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "directory_tree",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Directory Tree"
      }
    EOT
  }

  tool "edit_file" {
    digest     = "sha256:b8389399036271a6eee84d55c4817b009b0b155b855dddd632e19efaa679e38b"
    definition = <<-EOT
      {
        "annotations": {
          "destructiveHint": true,
          "openWorldHint": false
        },
        "description": "Make line-based edits to a text file. Each edit replaces exact line sequences with new content. Returns a git-style diff showing the changes made. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "dryRun": {
              "default": false,
              "description": "Preview changes using git-style diff format",
              "type": "boolean"
            },
            "edits": {
              "items": {
                "properties": {
                  "newText": {
                    "description": "Text to replace with",
                    "type": "string"
                  },
                  "oldText": {
                    "description": "Text to search for - must match exactly",
                    "type": "string"
                  }
                },
                "required": [
                  "oldText",
                  "newText"
                ],
                "type": "object"
              },
              "type": "array"
            },
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path",
            "edits"
          ],
          "type": "object"
        },
        "name": "edit_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Edit File"
      }
    EOT
  }

  tool "get_file_info" {
    digest     = "sha256:8689f8780910b9894360b37529b319dcdaed9f47066325cae314bb55f2056ff5"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, creation time, last modified time, permissions, and type. This tool is perfect for understanding file characteristics without reading the actual content. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "get_file_info",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Get File Info"
      }
    EOT
  }

  tool "list_allowed_directories" {
    digest     = "sha256:55b8d570824969f0d0f8496e0be8cdb24d9c706558d5f0e2f9912bc3478574cf"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Returns the list of directories that this server is allowed to access. Subdirectories within these allowed directories are also accessible. Use this to understand which directories and their nested paths are available before trying to access files.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {},
          "type": "object"
        },
        "name": "list_allowed_directories",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "List Allowed Directories"
      }
    EOT
  }

  tool "list_directory" {
    digest     = "sha256:eea65d6b763205ac4f8fefd64df128a100ca085e67ee9f17735092c9ed0a0b47"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is essential for understanding directory structure and finding specific files within a directory. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "list_directory",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "List Directory"
      }
    EOT
  }

  tool "list_directory_with_sizes" {
    digest     = "sha256:778e5f8d26f3fed1de036ce811d84defa8c343d33a11d17395e0219a0de898b6"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Get a detailed listing of all files and directories in a specified path, including sizes. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is useful for understanding directory structure and finding specific files within a directory. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "path": {
              "type": "string"
            },
            "sortBy": {
              "default": "name",
              "description": "Sort entries by name or size",
              "enum": [
                "name",
                "size"
              ],
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "list_directory_with_sizes",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "List Directory with Sizes"
      }
    EOT
  }

  tool "move_file" {
    digest     = "sha256:6594ec080362391c66c1f723401fc4be3bb624cd5601bdaade5d2f7393d587d9"
    definition = <<-EOT
      {
        "annotations": {
          "destructiveHint": true,
          "openWorldHint": false
        },
        "description": "Move or rename files and directories. Can move files between directories and rename them in a single operation. If the destination exists, the operation will fail. Works across different directories and can be used for simple renaming within the same directory. Both source and destination must be within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "destination": {
              "type": "string"
            },
            "source": {
              "type": "string"
            }
          },
          "required": [
            "source",
            "destination"
          ],
          "type": "object"
        },
        "name": "move_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Move File"
      }
    EOT
  }

  tool "read_file" {
    digest     = "sha256:85b34d15fe97ffc872399535b07e6a9737ef79376f6bdf73aca037e062bf3d9d"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "head": {
              "description": "If provided, returns only the first N lines of the file",
              "type": "number"
            },
            "path": {
              "type": "string"
            },
            "tail": {
              "description": "If provided, returns only the last N lines of the file",
              "type": "number"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "read_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Read File (Deprecated)"
      }
    EOT
  }

  tool "read_media_file" {
    digest     = "sha256:9577705558f0fddbaceac42a8ca633eab5708dad3a71148872b980b3b04a89a3"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are returned as image/audio content; any other file type is returned as an embedded resource. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "read_media_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "items": {
                "anyOf": [
                  {
                    "additionalProperties": false,
                    "properties": {
                      "data": {
                        "type": "string"
                      },
                      "mimeType": {
                        "type": "string"
                      },
                      "type": {
                        "enum": [
                          "image",
                          "audio"
                        ],
                        "type": "string"
                      }
                    },
                    "required": [
                      "type",
                      "data",
                      "mimeType"
                    ],
                    "type": "object"
                  },
                  {
                    "additionalProperties": false,
                    "properties": {
                      "resource": {
                        "additionalProperties": false,
                        "properties": {
                          "blob": {
                            "type": "string"
                          },
                          "mimeType": {
                            "type": "string"
                          },
                          "uri": {
                            "type": "string"
                          }
                        },
                        "required": [
                          "uri",
                          "blob"
                        ],
                        "type": "object"
                      },
                      "type": {
                        "const": "resource",
                        "type": "string"
                      }
                    },
                    "required": [
                      "type",
                      "resource"
                    ],
                    "type": "object"
                  }
                ]
              },
              "type": "array"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Read Media File"
      }
    EOT
  }

  tool "read_multiple_files" {
    digest     = "sha256:702c13ffb544a144c08456046a825f095af14d86253e3b175703f8f7ce35a268"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "paths": {
              "description": "Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.",
              "items": {
                "type": "string"
              },
              "minItems": 1,
              "type": "array"
            }
          },
          "required": [
            "paths"
          ],
          "type": "object"
        },
        "name": "read_multiple_files",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Read Multiple Files"
      }
    EOT
  }

  tool "read_text_file" {
    digest     = "sha256:a907a878b1659a1d0b23f6aff28f354ce7265fc5bcdb80e46fc675e73b464acf"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Read the complete contents of a file from the file system as text. Handles various text encodings and provides detailed error messages if the file cannot be read. Use this tool when you need to examine the contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the file as text regardless of extension. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "head": {
              "description": "If provided, returns only the first N lines of the file",
              "type": "number"
            },
            "path": {
              "type": "string"
            },
            "tail": {
              "description": "If provided, returns only the last N lines of the file",
              "type": "number"
            }
          },
          "required": [
            "path"
          ],
          "type": "object"
        },
        "name": "read_text_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Read Text File"
      }
    EOT
  }

  tool "search_files" {
    digest     = "sha256:bf42b817410f76ffd2c3a482482e0187592c9df6cf6140cb6c72fcd6ecb4b2fc"
    definition = <<-EOT
      {
        "annotations": {
          "openWorldHint": false,
          "readOnlyHint": true
        },
        "description": "Recursively search for files and directories matching a pattern. The patterns should be glob-style patterns that match paths relative to the working directory. Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all subdirectories. Returns full paths to all matching items. Great for finding files when you don't know their exact location. Only searches within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "excludePatterns": {
              "default": [],
              "items": {
                "type": "string"
              },
              "type": "array"
            },
            "path": {
              "type": "string"
            },
            "pattern": {
              "type": "string"
            }
          },
          "required": [
            "path",
            "pattern"
          ],
          "type": "object"
        },
        "name": "search_files",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Search Files"
      }
    EOT
  }

  tool "write_file" {
    digest     = "sha256:e1724b3813f2a5be5758dc7619c45b862b24f1e19f55b14a01146eb915556bea"
    definition = <<-EOT
      {
        "annotations": {
          "destructiveHint": true,
          "idempotentHint": true,
          "openWorldHint": false
        },
        "description": "Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. Handles text content with proper encoding. Only works within allowed directories.",
        "inputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "properties": {
            "content": {
              "type": "string"
            },
            "path": {
              "type": "string"
            }
          },
          "required": [
            "path",
            "content"
          ],
          "type": "object"
        },
        "name": "write_file",
        "outputSchema": {
          "$schema": "http://json-schema.org/draft-07/schema#",
          "additionalProperties": false,
          "properties": {
            "content": {
              "type": "string"
            }
          },
          "required": [
            "content"
          ],
          "type": "object"
        },
        "title": "Write File"
      }
    EOT
  }
}
