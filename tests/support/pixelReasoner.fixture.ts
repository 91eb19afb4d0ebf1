/**
 * The Pixel Reasoner system text as the reference renders it (1446 chars), copied verbatim from the
 * project's protocol reference (section 2, "Exact system text … re-rendered and diffed"), which renders
 * TIGER-AI-Lab/Pixel-Reasoner@a3a6c3a5 EM:1450-1453 through qwen-agent's NousFnCallPrompt.
 */
export const PR_SYSTEM_PROMPT_REFERENCE =
  "You are a helpful assistant.\n" +
  "\n" +
  "# Tools\n" +
  "\n" +
  "You may call one or more functions to assist with the user query.\n" +
  "\n" +
  "You are provided with function signatures within <tools></tools> XML tags:\n" +
  "<tools>\n" +
  "{\"type\": \"function\", \"function\": {\"name\": \"crop_image_normalized\", \"description\": \"Zoom in on the image based on the bounding box coordinates. It is useful when the object or text in the image is too small to be seen.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"bbox_2d\": {\"type\": \"array\", \"description\": \"coordinates for bounding box of the area you want to zoom in. Values should be within [0.0,1.0].\", \"items\": {\"type\": \"number\"}}, \"target_image\": {\"type\": \"number\", \"description\": \"The index of the image to crop. Index from 1 to the number of images. Choose 1 to operate on original image.\"}}, \"required\": [\"bbox_2d\", \"target_image\"]}}}\n" +
  "{\"type\": \"function\", \"function\": {\"name\": \"select_frames\", \"description\": \"Select frames from a video.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"target_frames\": {\"type\": \"array\", \"description\": \"List of frame indices to select from the video (no more than 8 frames in total).\", \"items\": {\"type\": \"integer\", \"description\": \"Frame index from 1 to 16.\"}}}, \"required\": [\"target_frames\"]}}}\n" +
  "</tools>\n" +
  "\n" +
  "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
  "<tool_call>\n" +
  "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n" +
  "</tool_call>";
